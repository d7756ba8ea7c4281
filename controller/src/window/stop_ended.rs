//! "Did this status write end one of a window's stops?" Pure. A draining window counts
//! each workspace it asked to stop as in flight until the workspace is `Stopped` (its pod
//! gone); under `maxConcurrentDrains` the next stop starts only then. Learning it from the
//! window's poll (every 2 s while draining) added a second per stop on average; the
//! workspace reconciler, which writes that very status, wakes the window instead.

use kube::ResourceExt;
use lifeguard_api::drain::is_done_phase;
use lifeguard_api::names::DRAINED_BY_ANNOTATION;
use lifeguard_api::{Workspace, WorkspaceStatus};

/// The window to wake: the one that drained `ws`, when `next` ends its stop.
pub fn window_to_wake<'a>(ws: &'a Workspace, next: &WorkspaceStatus) -> Option<&'a str> {
    let window = ws.annotations().get(DRAINED_BY_ANNOTATION)?;
    (is_done_phase(next.phase) && !is_done_phase(ws.phase())).then_some(window.as_str())
}

#[cfg(test)]
mod tests {
    use lifeguard_api::WorkspacePhase;
    use serde_json::json;

    use super::*;

    fn ws(annotations: serde_json::Value, phase: &str) -> Workspace {
        serde_json::from_value(json!({
            "metadata": {"name": "w", "namespace": "n", "annotations": annotations},
            "spec": {"podTemplate": {}}, "status": {"phase": phase},
        }))
        .expect("workspace")
    }

    fn status(phase: WorkspacePhase) -> WorkspaceStatus {
        WorkspaceStatus {
            phase: Some(phase),
            ..WorkspaceStatus::default()
        }
    }

    #[test]
    fn only_the_write_that_ends_a_drained_workspace_wakes_its_window() {
        use WorkspacePhase::{Failed, Running, Stopped, Stopping};
        let drained = json!({DRAINED_BY_ANNOTATION: "upgrade"});
        // (case, annotations, stored phase, written phase, window woken)
        let cases = [
            (
                "stop ends",
                drained.clone(),
                "Stopping",
                Stopped,
                Some("upgrade"),
            ),
            (
                "stopped before its pod ran",
                drained.clone(),
                "Pending",
                Stopped,
                Some("upgrade"),
            ),
            (
                "failed while stopping",
                drained.clone(),
                "Stopping",
                Failed,
                Some("upgrade"),
            ),
            ("still stopping", drained.clone(), "Running", Stopping, None),
            (
                "already stopped: woken once",
                drained.clone(),
                "Stopped",
                Stopped,
                None,
            ),
            ("not drained", json!({}), "Stopping", Stopped, None),
            ("running", drained, "Creating", Running, None),
        ];
        for (case, annotations, before, after, want) in cases {
            let w = ws(annotations, before);
            assert_eq!(window_to_wake(&w, &status(after)), want, "{case}");
        }
    }
}
