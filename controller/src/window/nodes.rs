//! A node-scoped window's per-node view, pure: which nodes it selects, how many covered
//! workspaces are left on each, and the label and annotation each Node should carry so an
//! upgrade tool can wait for `lifeguard.dev/drained=true`.
//!
//! `drained=true` is a promise that nothing lifeguard looks after is left on the node, so
//! it needs more than this window's covered Workspaces: a pod lifeguard still holds while
//! its work is saved counts even once its Workspace is deleted or no longer covered
//! (`held_pods`), and every other active enforcing window that selects the node must have
//! nothing left there either (`pending_elsewhere`).

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::maintenance::NodeDrainStatus;
use lifeguard_api::names::{NODE_DRAINED_LABEL, NODE_WINDOW_ANNOTATION, POD_FINALIZER};
use lifeguard_api::window::CompiledWindow;

/// What the controller read of a Node: its name, labels and annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeMeta {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// Covered workspaces not yet done (and pods still held), per selected node.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NodeTally {
    left: BTreeMap<String, u32>,
    /// Selected nodes where another active enforcing window still has workspaces.
    pending_elsewhere: BTreeSet<String>,
}

impl NodeTally {
    /// A tally with a zero for every node `window` selects among `nodes`.
    pub fn for_nodes(window: &CompiledWindow, nodes: &[NodeMeta]) -> Self {
        Self {
            left: nodes
                .iter()
                .filter(|n| window.selects_node(&n.labels))
                .map(|n| (n.name.clone(), 0))
                .collect(),
            pending_elsewhere: BTreeSet::new(),
        }
    }

    pub fn selects(&self, node: &str) -> bool {
        self.left.contains_key(node)
    }

    /// Counts a covered, not yet stopped workspace whose pod is on `node`.
    pub fn count(&mut self, node: &str) {
        if let Some(left) = self.left.get_mut(node) {
            *left += 1;
        }
    }

    /// Counts `held` pods lifeguard still holds on `node` that no covered workspace
    /// accounts for (`held_pods`). Only asked where no covered workspace is left: there the
    /// two cannot count one pod twice.
    pub fn count_held(&mut self, node: &str, held: u32) {
        if let Some(left) = self.left.get_mut(node) {
            *left += held;
        }
    }

    /// Selected nodes where no covered workspace is left, which `node_changes` would call
    /// drained unless a held pod or another window says otherwise.
    pub fn empty_nodes(&self) -> impl Iterator<Item = &str> {
        self.left
            .iter()
            .filter(|(_, left)| **left == 0)
            .map(|(node, _)| node.as_str())
    }

    /// Notes the nodes where another window still has workspaces (`pending_elsewhere`).
    pub fn wait_for_other_windows(&mut self, nodes: BTreeSet<String>) {
        self.pending_elsewhere = nodes;
    }

    /// Whether `node` is drained: nothing is left of this window there, and no other active
    /// enforcing window that selects it has anything left there.
    fn drained(&self, node: &str) -> bool {
        self.left.get(node) == Some(&0) && !self.pending_elsewhere.contains(node)
    }

    /// The per-node list of the window's status.
    pub fn status(&self) -> Vec<NodeDrainStatus> {
        self.left
            .iter()
            .map(|(node, left)| NodeDrainStatus {
                node: node.clone(),
                workspaces_left: *left,
                drained: self.drained(node),
            })
            .collect()
    }
}

/// Of the workspace pods read on one node, how many lifeguard still holds while they stop:
/// deleted, their work not yet disposed of (the disposal finalizer still on). Their
/// Workspace may be gone or no longer covered; the node is not drained while they are there.
pub fn held_pods<'a>(pods: impl IntoIterator<Item = &'a ObjectMeta>) -> u32 {
    pods.into_iter()
        .filter(|pod| {
            pod.deletion_timestamp.is_some()
                && pod.finalizers.iter().flatten().any(|f| f == POD_FINALIZER)
        })
        .count() as u32
}

/// The nodes among `nodes` where a window other than `this` still has workspaces at `now`:
/// every other window that is active, enforcing and node-scoped and selects the node,
/// unless its status reports that node with no workspace left. A window that has not yet
/// reported a node it selects counts as having some left there (it may not have surveyed
/// since it opened). Reported counts, not other windows' `drained`, so that two windows
/// waiting on each other still settle.
pub fn pending_elsewhere<'a>(
    this: &str,
    windows: impl IntoIterator<Item = &'a MaintenanceWindow>,
    nodes: &[NodeMeta],
    now: Timestamp,
) -> BTreeSet<String> {
    let mut pending = BTreeSet::new();
    for mw in windows {
        if mw.metadata.name.as_deref() == Some(this) {
            continue;
        }
        let Ok(window) = CompiledWindow::compile(mw) else {
            continue;
        };
        if !window.enforces() || !window.node_scoped() || window.active_at(now).is_none() {
            continue;
        }
        let reported = mw
            .status
            .as_ref()
            .map(|s| s.nodes.as_slice())
            .unwrap_or(&[]);
        for node in nodes.iter().filter(|n| window.selects_node(&n.labels)) {
            let nothing_left = reported
                .iter()
                .any(|r| r.node == node.name && r.workspaces_left == 0);
            if !nothing_left {
                pending.insert(node.name.clone());
            }
        }
    }
    pending
}

/// A change to one Node's lifeguard label and annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeChange {
    /// Set `lifeguard.dev/drained` to this value and the window annotation to the window.
    Mark { node: String, drained: bool },
    /// Remove both: the window no longer selects the node, or is over.
    Clear { node: String },
}

/// The changes that bring `nodes` to what window `name` says: with `tally` (the window is
/// active and node-scoped), every selected node is marked; a node this window marked
/// before but no longer selects, or every such node once the window is over (`None`), is
/// cleared. A node another window marked is left to that window: the first one wins, so
/// two windows never flip one node's label, and it calls the node drained only once the
/// others have nothing left there either (`NodeTally::wait_for_other_windows`).
pub fn node_changes(name: &str, tally: Option<&NodeTally>, nodes: &[NodeMeta]) -> Vec<NodeChange> {
    let mut changes = Vec::new();
    for node in nodes {
        let owner = node.annotations.get(NODE_WINDOW_ANNOTATION);
        let ours = owner.is_some_and(|o| o == name);
        let theirs = owner.is_some() && !ours;
        let selected = tally.filter(|t| t.selects(&node.name));
        match selected {
            Some(_) if theirs => {}
            Some(tally) => {
                let drained = tally.drained(&node.name);
                let want = if drained { "true" } else { "false" };
                if !ours || node.labels.get(NODE_DRAINED_LABEL).map(String::as_str) != Some(want) {
                    changes.push(NodeChange::Mark {
                        node: node.name.clone(),
                        drained,
                    });
                }
            }
            None if ours => changes.push(NodeChange::Clear {
                node: node.name.clone(),
            }),
            None => {}
        }
    }
    changes
}

/// Of `windows`, those that apply to a workspace whose pod is on a node with `node_labels`
/// (`None`: no pod, or a node not seen): a node-scoped window applies only on the nodes it
/// selects, so its notice goes only to the workspaces its drain will stop.
pub fn for_node(
    windows: Vec<CompiledWindow>,
    node_labels: Option<&BTreeMap<String, String>>,
) -> Vec<CompiledWindow> {
    windows
        .into_iter()
        .filter(|w| !w.node_scoped() || node_labels.is_some_and(|l| w.selects_node(l)))
        .collect()
}

/// For the sweep: nodes marked by a window that no longer exists.
pub fn orphaned(
    nodes: &[NodeMeta],
    window_exists: impl Fn(&str) -> bool,
) -> impl Iterator<Item = &NodeMeta> {
    nodes.iter().filter(move |n| {
        n.annotations
            .get(NODE_WINDOW_ANNOTATION)
            .is_some_and(|w| !window_exists(w))
            || (n.labels.contains_key(NODE_DRAINED_LABEL)
                && !n.annotations.contains_key(NODE_WINDOW_ANNOTATION))
    })
}

#[cfg(test)]
#[path = "nodes_tests.rs"]
mod nodes_tests;
