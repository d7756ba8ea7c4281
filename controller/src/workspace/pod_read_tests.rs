use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};
use serde_json::json;

use super::{CachedPod, must_read};

fn workspace() -> Workspace {
    serde_json::from_value(json!({
        "metadata": {"name": "alice", "namespace": "team-a", "uid": "u1"},
        "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}
    }))
    .expect("workspace literal")
}

fn with_status(phase: Option<WorkspacePhase>) -> Workspace {
    let mut ws = workspace();
    ws.status = Some(WorkspaceStatus {
        phase,
        ..Default::default()
    });
    ws
}

fn deleting() -> Workspace {
    let mut ws = workspace();
    ws.metadata.deletion_timestamp = Some(Time("2026-11-27T12:00:00Z".parse().expect("time")));
    ws
}

#[test]
fn only_a_new_workspace_with_no_cached_pod_skips_the_read() {
    let cases = [
        (
            "new, cache has no pod",
            workspace(),
            CachedPod::Absent,
            false,
        ),
        (
            "new, cache not listed yet",
            workspace(),
            CachedPod::Unknown,
            true,
        ),
        (
            "new, a pod of the name is cached",
            workspace(),
            CachedPod::Present,
            true,
        ),
        // A status was written: a pod may have been created, refused or lost since.
        (
            "reconciled before (even an empty status)",
            with_status(None),
            CachedPod::Absent,
            true,
        ),
        (
            "Creating, its pod maybe not in the cache yet",
            with_status(Some(WorkspacePhase::Creating)),
            CachedPod::Absent,
            true,
        ),
        (
            "Running",
            with_status(Some(WorkspacePhase::Running)),
            CachedPod::Absent,
            true,
        ),
        // Without a pod a deleted Workspace loses its finalizer: that needs the truth.
        (
            "deleted, never reconciled",
            deleting(),
            CachedPod::Absent,
            true,
        ),
    ];
    for (what, ws, cached, expected) in cases {
        assert_eq!(must_read(&ws, cached), expected, "{what}");
    }
}
