//! A stop, walked action by action: a pod lifeguard's finalizer holds is still being
//! stopped whatever phase the kubelet gives it (since 1.27 a deleted pod turns Succeeded
//! or Failed once its containers exit, while the finalizer still holds it), so its
//! workspace shows `Stopping` until the release is due, and the final phase is written
//! just before the release.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::names::{DISPOSAL_CONFIRMATION_ANNOTATION, DISPOSAL_RESULT_ANNOTATION};
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};
use serde_json::{Value, json};

use super::plan_tests::{NOW, kind, now, ws};
use crate::workspace::plan::{Action, Settings, plan};

const DRAINED: &str = "lifeguard.dev/drained-by";

fn running_status() -> Value {
    json!({"phase": "Running", "podStarts": 1, "podName": "ws-alice", "nodeName": "node-1"})
}

fn terminated(exit_code: i32, finished: &str) -> Value {
    json!([{"name": "ide", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": exit_code, "reason": if exit_code == 0 { "Completed" } else { "Error" },
                                     "startedAt": "2026-12-01T10:00:00Z", "finishedAt": finished}}}])
}

/// The workspace pod as the kubelet reports it: `phase`, its one container, and metadata
/// (deletion, annotations) in `meta`.
fn held_pod(phase: &str, containers: Value, meta: Value) -> Pod {
    let mut metadata = json!({"name": "ws-alice", "uid": "pod-uid-1", "finalizers": ["lifeguard.dev/disposal"],
        "annotations": {"lifeguard.dev/start": "1"},
        "ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                             "name": "alice", "uid": "ws-uid", "controller": true}]});
    if let (Some(m), Some(extra)) = (metadata.as_object_mut(), meta.as_object()) {
        for (k, v) in extra {
            if k == "annotations" {
                if let (Some(a), Some(more)) = (m["annotations"].as_object_mut(), v.as_object()) {
                    a.extend(more.clone());
                }
            } else {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    serde_json::from_value(
        json!({"metadata": metadata, "spec": {"nodeName": "node-1", "containers": []},
        "status": {"phase": phase, "containerStatuses": containers}}),
    )
    .expect("pod literal")
}

fn confirmation(result: Option<&str>) -> Value {
    let mut a = json!({DISPOSAL_CONFIRMATION_ANNOTATION: "required"});
    if let Some(r) = result {
        a[DISPOSAL_RESULT_ANNOTATION] = json!(r);
    }
    a
}

/// Plans from `ws` with `pod` at `at`, storing each status the plan writes (as the
/// reconciler does), until it asks for something else: the phases it wrote, then that
/// action.
fn walk(mut ws: Workspace, pod: &Pod, at: Timestamp) -> (Vec<WorkspacePhase>, String) {
    let settings = Settings::default();
    let mut written = Vec::new();
    for _ in 0..5 {
        let action = plan(&ws, Some(pod), at, &settings);
        let status: WorkspaceStatus = match action {
            Action::UpdateStatus(s)
            | Action::RecordDisposal(s)
            | Action::RecordRejectedAfterRunning(s) => *s,
            other => return (written, kind(&other)),
        };
        written.extend(status.phase);
        ws.status = Some(status);
    }
    panic!("the plan kept writing statuses: {written:?}");
}

#[test]
fn a_held_pod_is_stopping_whatever_its_phase() {
    use WorkspacePhase::{Failed, Stopped, Stopping};
    let drained = json!({"annotations": {DRAINED: "upgrade"}});
    // Asked to stop at 11:59:00 with a 30 s grace period; containers exited at 11:59:05.
    let deleting = |annotations: Value| {
        json!({"deletionTimestamp": "2026-12-01T11:59:30Z", "deletionGracePeriodSeconds": 30,
               "annotations": annotations})
    };
    let exited = |code| terminated(code, "2026-12-01T11:59:05Z");
    let agent_deadline = "WaitUntil(2026-12-01T12:09:30Z)";
    let cases: Vec<(&str, Workspace, Pod, Vec<WorkspacePhase>, &str)> = vec![
        (
            "drained, Succeeded, waiting for the backup agent: still in flight",
            ws(running_status(), drained.clone()),
            held_pod("Succeeded", exited(0), deleting(confirmation(None))),
            vec![Stopping],
            agent_deadline,
        ),
        (
            "drained, Failed (exit 143 on SIGTERM), waiting for the agent: still in flight",
            ws(running_status(), drained.clone()),
            held_pod("Failed", exited(143), deleting(confirmation(None))),
            vec![Stopping],
            agent_deadline,
        ),
        (
            "drained, still Running, waiting for the agent: in flight",
            ws(running_status(), drained.clone()),
            held_pod("Running", exited(0), deleting(confirmation(None))),
            vec![Stopping],
            agent_deadline,
        ),
        (
            "drained, Failed, the agent saved it: outcome, final phase Stopped, then release",
            ws(running_status(), drained.clone()),
            held_pod("Failed", exited(143), deleting(confirmation(Some("saved")))),
            vec![Stopping, Stopping, Stopped],
            "ReleasePod",
        ),
        (
            "drained, Succeeded, no handshake: Stopped, then release",
            ws(running_status(), drained.clone()),
            held_pod("Succeeded", exited(0), deleting(json!({}))),
            vec![Stopped],
            "ReleasePod",
        ),
        (
            "Workspace deleted, Failed on SIGTERM, no handshake: Stopped, not Failed",
            ws(running_status(), json!({"deletionTimestamp": NOW})),
            held_pod("Failed", exited(143), deleting(json!({}))),
            vec![Stopped],
            "ReleasePod",
        ),
        (
            "pod deleted by someone else, Failed on SIGTERM: Stopped",
            ws(running_status(), json!({})),
            held_pod("Failed", exited(1), deleting(json!({}))),
            vec![Stopped],
            "ReleasePod",
        ),
        (
            "pod failed on its own: Stopping with the Failed condition, then deleted",
            ws(running_status(), json!({})),
            held_pod("Failed", exited(1), json!({})),
            vec![Stopping],
            "DeletePod { grace_seconds: None, cause: \"it ended (Failed)\" }",
        ),
        (
            "pod ended on its own (Succeeded): Stopping, then deleted",
            ws(running_status(), json!({})),
            held_pod("Succeeded", exited(0), json!({})),
            vec![Stopping],
            "DeletePod { grace_seconds: None, cause: \"it ended (Succeeded)\" }",
        ),
        (
            "not held (no finalizer of ours) and ended: final phase at once",
            ws(running_status(), drained.clone()),
            held_pod(
                "Succeeded",
                exited(0),
                json!({"finalizers": [], "deletionTimestamp": "2026-12-01T11:59:30Z"}),
            ),
            vec![Stopped],
            // Released: only the stuck-Terminating check waits on it now.
            "WaitUntil(2026-12-01T12:00:30Z)",
        ),
    ];
    for (what, workspace, pod, phases, action) in cases {
        let (written, next) = walk(workspace, &pod, now());
        assert_eq!((written, next.as_str()), (phases, action), "{what}");
    }

    // A pod that failed on its own ends its workspace Failed, once it is released.
    let mut workspace = ws(running_status(), json!({}));
    let settings = Settings::default();
    let failed = held_pod("Failed", exited(1), json!({}));
    let Action::UpdateStatus(status) = plan(&workspace, Some(&failed), now(), &settings) else {
        panic!("expected the Failed condition to be recorded first");
    };
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Failed")
        .expect("Failed condition");
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "PodFailed")
    );
    assert_eq!(status.phase, Some(Stopping), "held: still stopping");
    workspace.status = Some(*status);
    let deleted = held_pod("Failed", exited(1), deleting(json!({})));
    assert_eq!(
        walk(workspace, &deleted, now()),
        (vec![Failed], "ReleasePod".to_string()),
        "its final phase at release is Failed"
    );
}

#[test]
fn a_released_pod_still_terminating_keeps_the_final_phase() {
    let stopped =
        json!({"phase": "Stopped", "podStarts": 1, "podName": "ws-alice", "nodeName": "node-1"});
    let workspace = ws(stopped, json!({"annotations": {DRAINED: "upgrade"}}));
    let still_running = held_pod(
        "Running",
        json!([{"name": "ide", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                "state": {"running": {"startedAt": "2026-12-01T10:00:00Z"}}}]),
        json!({"finalizers": [], "deletionTimestamp": "2026-12-01T11:59:30Z"}),
    );
    let (written, _) = walk(workspace, &still_running, now());
    assert!(
        written.iter().all(|p| *p == WorkspacePhase::Stopped),
        "Stopped is kept, not {written:?}"
    );
}

#[test]
fn a_drain_stops_a_pod_within_the_grace_period_cap() {
    let running = json!([{"name": "ide", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                          "state": {"running": {"startedAt": "2026-12-01T10:00:00Z"}}}]);
    let drained = ws(
        running_status(),
        json!({"annotations": {DRAINED: "upgrade"}}),
    );
    // (what, the pod's own grace period, the delete's)
    let cases = [
        (
            "a year's, from a pod built before the cap",
            Some(31_536_000),
            "Some(300)",
        ),
        ("within the cap: the pod's own", Some(60), "None"),
        ("none: Kubernetes' 30 s", None, "None"),
    ];
    for (what, grace, want) in cases {
        let mut pod = held_pod("Running", running.clone(), json!({}));
        if let Some(spec) = pod.spec.as_mut() {
            spec.termination_grace_period_seconds = grace;
        }
        let (_, action) = walk(drained.clone(), &pod, now());
        assert_eq!(
            action,
            format!(
                "DeletePod {{ grace_seconds: {want}, cause: \"maintenance window upgrade drains it\" }}"
            ),
            "{what}"
        );
    }
}
