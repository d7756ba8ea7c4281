//! Node-scoped windows and drain budgets from the terminal, pure: the `--max-concurrent`
//! value, the per-node table of `maintenance status`, the progress `wait --drained`
//! shows, and what `maintenance preview` lists.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use lifeguard_api::drain::{covered, is_done};
use lifeguard_api::maintenance::NodeDrainStatus;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, Workspace};
use serde::Serialize;

use crate::drain::{DrainState, describe};
use crate::output::table;
use crate::when::rfc3339;

/// `--max-concurrent 2` or `--max-concurrent 25%`; the window's validation judges the value.
pub fn budget_flag(text: &str) -> IntOrString {
    match text.trim().parse::<i32>() {
        Ok(n) => IntOrString::Int(n),
        Err(_) => IntOrString::String(text.trim().to_string()),
    }
}

/// `maintenance status NAME`'s per-node table, empty for a window that is not node-scoped
/// or not active.
pub fn node_table(nodes: &[NodeDrainStatus]) -> String {
    if nodes.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = nodes
        .iter()
        .map(|n| {
            vec![
                n.node.clone(),
                n.workspaces_left.to_string(),
                n.drained.to_string(),
            ]
        })
        .collect();
    table(&["NODE", "WORKSPACES LEFT", "DRAINED"], &rows)
}

/// What a drain has done so far, for the progress line: `drained 2/4, 1 in flight;
/// node-2 2 left` (empty before the controller reported).
pub fn progress(window: &MaintenanceWindow) -> String {
    let Some(status) = &window.status else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let (Some(drained), Some(remaining)) =
        (status.workspaces_drained, status.workspaces_remaining)
    {
        let mut counts = format!("drained {drained}/{}", drained + remaining);
        if let Some(in_flight) = status.workspaces_in_flight.filter(|n| *n > 0) {
            counts.push_str(&format!(", {in_flight} in flight"));
        }
        if let Some(postponed) = status.workspaces_postponed.filter(|n| *n > 0) {
            counts.push_str(&format!(", {postponed} postponed"));
        }
        if window.spec.drain_paused {
            counts.push_str(", paused");
        }
        parts.push(counts);
    }
    let nodes: Vec<String> = status
        .nodes
        .iter()
        .map(|n| match n.workspaces_left {
            0 => format!("{} drained", n.node),
            left => format!("{} {left} left", n.node),
        })
        .collect();
    if !nodes.is_empty() {
        parts.push(nodes.join(", "));
    }
    parts.join("; ")
}

/// For `wait --drained --node NODE`: `Some(true)` once the window reports the node drained,
/// `Some(false)` while it does not, `None` when the window does not list the node (not
/// selected, or not active yet).
pub fn node_drained(window: &MaintenanceWindow, node: &str) -> Option<bool> {
    window
        .status
        .as_ref()?
        .nodes
        .iter()
        .find(|n| n.node == node)
        .map(|n| n.drained)
}

/// The progress line `wait` logs when stderr is not a terminal: without the countdown to
/// the opening, so that it changes only when something happens (a line per poll would
/// read like a log, not a progress bar).
pub fn settled_description(state: &DrainState, now: jiff::Timestamp) -> String {
    match state {
        DrainState::NotYetOpen { opens } => format!("not open yet; opens at {}", rfc3339(*opens)),
        other => describe(other, now),
    }
}

/// `description` and the drain's `progress`, as one line.
pub fn with_progress(description: String, progress: &str) -> String {
    if progress.is_empty() {
        description
    } else {
        format!("{description} ({progress})")
    }
}

/// What a window covers now: `maintenance preview`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    pub namespaces: Vec<String>,
    /// `namespace/name` of the covered workspaces that still run (on a selected node, for
    /// a node-scoped window): the ones a drain would stop.
    pub workspaces: Vec<String>,
    /// The selected nodes; every node for a window without `nodeSelector`.
    pub nodes: Vec<String>,
    /// The next (or current) occurrence, `start - end`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occurrence: Option<String>,
}

/// What `window` covers among these namespaces (name and labels), workspaces and nodes
/// (name and labels); the same rules the controller's drain applies.
pub fn preview(
    window: &CompiledWindow,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    workspaces: &[Workspace],
    nodes: &BTreeMap<String, BTreeMap<String, String>>,
) -> Preview {
    let selected: BTreeSet<&String> = nodes
        .iter()
        .filter(|(_, labels)| window.selects_node(labels))
        .map(|(name, _)| name)
        .collect();
    let on_selected = |ws: &Workspace| {
        !window.node_scoped()
            || ws
                .status
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .is_some_and(|n| selected.contains(n))
    };
    let mut covered_ws: Vec<String> = workspaces
        .iter()
        .filter(|ws| covered(window, ws, namespaces) && !is_done(ws) && on_selected(ws))
        .map(|ws| format!("{}/{}", ws.namespace().unwrap_or_default(), ws.name_any()))
        .collect();
    covered_ws.sort();
    Preview {
        namespaces: namespaces
            .iter()
            .filter(|(_, labels)| window.covers_namespace(labels))
            .map(|(name, _)| name.clone())
            .collect(),
        workspaces: covered_ws,
        nodes: selected.into_iter().cloned().collect(),
        occurrence: None,
    }
}

/// `preview`'s text: one section per kind, so an operator sees the blast radius.
pub fn render_preview(name: &str, p: &Preview) -> String {
    let list = |items: &[String]| {
        if items.is_empty() {
            "  (none)\n".to_string()
        } else {
            items.iter().map(|i| format!("  {i}\n")).collect()
        }
    };
    format!(
        "maintenancewindow/{name} covers now:\nnamespaces ({}):\n{}workspaces it would drain ({}):\n{}nodes ({}):\n{}next occurrence: {}\n",
        p.namespaces.len(),
        list(&p.namespaces),
        p.workspaces.len(),
        list(&p.workspaces),
        p.nodes.len(),
        list(&p.nodes),
        p.occurrence.as_deref().unwrap_or("none"),
    )
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod scope_tests;
