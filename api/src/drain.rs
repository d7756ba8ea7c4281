//! The one rule of what a draining window still waits for, shared by the controller (which
//! counts `workspacesRemaining`) and the CLI (which lists the workspaces by name), so the
//! two never disagree. Pure.

use std::collections::BTreeMap;

use kube::ResourceExt;

use crate::window::CompiledWindow;
use crate::{Workspace, WorkspacePhase};

/// A workspace is done draining once it is Stopped or Failed: nothing of it runs any more.
pub fn is_done(ws: &Workspace) -> bool {
    is_done_phase(ws.phase())
}

/// `is_done` for a workspace in `phase`.
pub fn is_done_phase(phase: Option<WorkspacePhase>) -> bool {
    matches!(
        phase,
        Some(WorkspacePhase::Stopped | WorkspacePhase::Failed)
    )
}

/// Whether `window` covers `ws` (its namespace's labels looked up in `namespace_labels`).
/// A Workspace being deleted is left to its deletion, which stops it anyway.
pub fn covered(
    window: &CompiledWindow,
    ws: &Workspace,
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> bool {
    let empty = BTreeMap::new();
    let namespace = ws.namespace().unwrap_or_default();
    ws.metadata.deletion_timestamp.is_none()
        && window.covers(
            namespace_labels.get(&namespace).unwrap_or(&empty),
            ws.labels(),
        )
}

/// Whether the drain of `window` still waits for `ws`: covered and not yet done. A covered
/// Workspace that never got a pod counts until the controller has recorded it Stopped.
pub fn still_remaining(
    window: &CompiledWindow,
    ws: &Workspace,
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> bool {
    covered(window, ws, namespace_labels) && !is_done(ws)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MaintenanceWindow;
    use serde_json::{Value, json};

    fn window() -> CompiledWindow {
        let w: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": "upgrade"},
            "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true,
                     "namespaceSelector": {"matchLabels": {"env": "dev"}}}
        }))
        .expect("window literal");
        CompiledWindow::compile(&w).expect("valid window")
    }

    fn ws(namespace: &str, phase: Value, extra_meta: Value) -> Workspace {
        let mut meta = json!({"name": "alice", "namespace": namespace});
        if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
            m.extend(extra.clone());
        }
        serde_json::from_value(json!({
            "metadata": meta, "spec": {"podTemplate": {}},
            "status": if phase.is_null() { Value::Null } else { json!({"phase": phase}) }
        }))
        .expect("workspace literal")
    }

    #[test]
    fn what_a_drain_still_waits_for() {
        let labels = BTreeMap::from([
            (
                "dev".to_string(),
                BTreeMap::from([("env".into(), "dev".into())]),
            ),
            (
                "prod".to_string(),
                BTreeMap::from([("env".into(), "prod".into())]),
            ),
        ]);
        let cases = [
            ("running", ws("dev", json!("Running"), json!({})), true),
            ("stopping", ws("dev", json!("Stopping"), json!({})), true),
            ("creating", ws("dev", json!("Creating"), json!({})), true),
            (
                "pending, no pod yet",
                ws("dev", json!("Pending"), json!({})),
                true,
            ),
            ("no phase yet", ws("dev", Value::Null, json!({})), true),
            ("stopped", ws("dev", json!("Stopped"), json!({})), false),
            ("failed", ws("dev", json!("Failed"), json!({})), false),
            (
                "not covered",
                ws("prod", json!("Running"), json!({})),
                false,
            ),
            (
                "unknown namespace",
                ws("gone", json!("Running"), json!({})),
                false,
            ),
            (
                "being deleted",
                ws(
                    "dev",
                    json!("Running"),
                    json!({"deletionTimestamp": "2026-12-01T22:10:00Z"}),
                ),
                false,
            ),
        ];
        for (what, workspace, want) in cases {
            assert_eq!(
                still_remaining(&window(), &workspace, &labels),
                want,
                "{what}"
            );
        }
    }
}
