//! How long a workspace start took, for the start SLO
//! (`lifeguard_controller_workspace_start_seconds`): from the Workspace's creation (first
//! start) or its replacement pod's creation (a re-creation) to the status write that makes
//! it `Running` (outcome `started`) or `Failed` before it ran (outcome `failed`). Pure: the
//! reconciler observes what this returns right after the status write succeeds, so each
//! start is counted once, also across controller restarts (the write happens once).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

/// Metric label of a finished start.
pub fn finished_start(
    before: Option<WorkspacePhase>,
    after: Option<WorkspacePhase>,
) -> Option<&'static str> {
    let starting = matches!(
        before,
        None | Some(WorkspacePhase::Pending | WorkspacePhase::Creating)
    );
    match after {
        _ if !starting => None,
        Some(WorkspacePhase::Running) => Some("started"),
        Some(WorkspacePhase::Failed) => Some("failed"),
        _ => None,
    }
}

/// When the start that `new` finishes began: the replacement pod's creation for a
/// re-creation, else the Workspace's creation.
pub fn start_began(ws: &Workspace, pod: Option<&Pod>, new: &WorkspaceStatus) -> Option<Timestamp> {
    let workspace_created = ws.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if new.pod_recreated == 0 {
        return workspace_created;
    }
    pod.and_then(|p| p.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
        .or(workspace_created)
}

/// (outcome, seconds) to observe for a status write from `ws`'s stored status to `new`.
pub fn observation(
    ws: &Workspace,
    pod: Option<&Pod>,
    new: &WorkspaceStatus,
    now: Timestamp,
) -> Option<(&'static str, f64)> {
    let before = ws.phase();
    let outcome = finished_start(before, new.phase)?;
    let began = start_began(ws, pod, new)?;
    let seconds = now.duration_since(began).as_secs_f64().max(0.0);
    Some((outcome, seconds))
}

#[cfg(test)]
#[path = "start_latency_tests.rs"]
mod start_latency_tests;
