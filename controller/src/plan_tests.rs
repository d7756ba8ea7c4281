//! Table-driven tests of the next action over the states a workspace goes through.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::{Workspace, WorkspacePhase};
use serde_json::{Value, json};

use crate::plan::{Action, Settings, plan, stop_cause};

pub(crate) const NOW: &str = "2026-12-01T12:00:00Z";

pub(crate) fn now() -> Timestamp {
    NOW.parse().expect("time")
}

pub(crate) fn ws(status: Value, extra_meta: Value) -> Workspace {
    let mut meta = json!({"name": "alice", "namespace": "team", "uid": "ws-uid", "generation": 1,
                          "finalizers": ["lifeguard.dev/workspace"]});
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
        m.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "metadata": meta,
        "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "busybox"}]}}},
        "status": status
    }))
    .expect("workspace literal")
}

pub(crate) fn pod(status: Value, extra_meta: Value) -> Pod {
    let mut meta = json!({"name": "ws-alice", "uid": "pod-uid-1", "finalizers": ["lifeguard.dev/disposal"],
                          "annotations": {"lifeguard.dev/start": "1"},
                          "ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                                               "name": "alice", "uid": "ws-uid", "controller": true}]});
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
        m.extend(extra.clone());
    }
    serde_json::from_value(json!({"metadata": meta, "spec": {"nodeName": "node-1", "containers": []}, "status": status}))
        .expect("pod literal")
}

pub(crate) fn rejected_condition(status: &str) -> Value {
    json!([{"type": "PodRejected", "status": status, "reason": "NodeAffinity", "message": "m",
            "lastTransitionTime": "2026-12-01T11:00:00Z"}])
}

pub(crate) fn kind(action: &Action) -> String {
    match action {
        Action::UpdateStatus(s) => format!("UpdateStatus({:?})", s.phase),
        Action::RecordRejection(_) => "RecordRejection".into(),
        Action::GiveUp(_) => "GiveUp".into(),
        Action::WaitUntil(t) => format!("WaitUntil({t})"),
        other => format!("{other:?}"),
    }
}

#[test]
fn next_action() {
    let settings = Settings::default();
    let rejected_pod = |uid: &str, meta: Value| {
        let mut meta = meta;
        meta["uid"] = json!(uid);
        pod(
            json!({"phase": "Failed", "reason": "NodeAffinity", "message": "Predicate NodeAffinity failed"}),
            meta,
        )
    };
    let recorded = |uid: &str| {
        json!({"phase": "Pending", "podStarts": 1, "conditions": rejected_condition("True"),
        "lastRejection": {"podUID": uid, "reason": "NodeAffinity", "message": "", "node": "node-1", "time": "2026-12-01T11:00:00Z"}})
    };
    let gone = |deleted: &str, recreated: u32| {
        json!({"phase": "Pending", "podStarts": 1 + recreated, "podRecreated": recreated,
        "podDeletionTime": deleted, "conditions": rejected_condition("True"),
        "lastRejection": {"podUID": "old", "reason": "NodeAffinity", "message": "", "node": "node-1", "time": "2026-12-01T11:00:00Z"}})
    };
    let running_pod = pod(
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "ide", "image": "i", "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]}),
        json!({}),
    );
    let deleting_running_pod = pod(
        json!({"phase": "Running",
        "containerStatuses": [{"name": "ide", "image": "i", "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]}),
        json!({"deletionTimestamp": "2026-12-01T11:59:00Z"}),
    );
    let overdue_pod = pod(
        json!({"phase": "Running",
        "containerStatuses": [{"name": "ide", "image": "i", "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]}),
        json!({"deletionTimestamp": "2026-12-01T11:50:00Z"}),
    );
    let cases: Vec<(&str, Workspace, Option<Pod>, String)> = vec![
        (
            "new workspace gets our finalizer",
            ws(json!(null), json!({"finalizers": []})),
            None,
            "AddWorkspaceFinalizer".into(),
        ),
        (
            "first start",
            ws(json!(null), json!({})),
            None,
            "CreatePod { start: 1, recreation: None }".into(),
        ),
        (
            "pod pending: Creating",
            ws(json!({"podStarts": 1}), json!({})),
            Some(pod(json!({"phase": "Pending"}), json!({}))),
            "UpdateStatus(Some(Creating))".into(),
        ),
        (
            "pod running: Running",
            ws(json!({"podStarts": 1, "phase": "Creating"}), json!({})),
            Some(running_pod.clone()),
            "UpdateStatus(Some(Running))".into(),
        ),
        (
            "kubelet rejection is recorded first",
            ws(json!({"podStarts": 1, "phase": "Creating"}), json!({})),
            Some(rejected_pod("pod-uid-1", json!({}))),
            "RecordRejection".into(),
        ),
        (
            "recorded rejection: release without disposal wait",
            ws(recorded("pod-uid-1"), json!({})),
            Some(rejected_pod("pod-uid-1", json!({}))),
            "ReleasePod".into(),
        ),
        (
            "released rejected pod is deleted at once",
            ws(recorded("pod-uid-1"), json!({})),
            Some(rejected_pod("pod-uid-1", json!({"finalizers": []}))),
            "DeletePod { grace_seconds: Some(0), cause: \"the kubelet rejected it; nothing ran, so it goes without a grace period\" }".into(),
        ),
        (
            "deleting rejected pod: wait for it",
            ws(recorded("pod-uid-1"), json!({})),
            Some(rejected_pod(
                "pod-uid-1",
                json!({"finalizers": [], "deletionTimestamp": NOW}),
            )),
            "Idle".into(),
        ),
        (
            "a second rejection of the same name is new",
            ws(recorded("old"), json!({})),
            Some(rejected_pod("pod-uid-2", json!({}))),
            "RecordRejection".into(),
        ),
        (
            "pod gone: deletion time recorded",
            ws(
                json!({"phase": "Pending", "podStarts": 1, "conditions": rejected_condition("True")}),
                json!({}),
            ),
            None,
            "UpdateStatus(Some(Pending))".into(),
        ),
        (
            "backoff not over",
            ws(gone("2026-12-01T11:59:50Z", 0), json!({})),
            None,
            "WaitUntil(2026-12-01T12:00:05Z)".into(),
        ),
        (
            "backoff over: same name again",
            ws(gone("2026-12-01T11:59:40Z", 0), json!({})),
            None,
            "CreatePod { start: 2, recreation: Some(1) }".into(),
        ),
        (
            "third re-creation",
            ws(gone("2026-12-01T11:59:00Z", 2), json!({})),
            None,
            "CreatePod { start: 4, recreation: Some(3) }".into(),
        ),
        (
            "retries used up",
            ws(gone("2026-12-01T11:59:00Z", 3), json!({})),
            None,
            "GiveUp".into(),
        ),
        (
            "failed stays failed",
            ws(
                json!({"phase": "Failed", "podStarts": 4, "podRecreated": 3, "conditions": rejected_condition("True")}),
                json!({}),
            ),
            None,
            "Idle".into(),
        ),
        (
            "pod deleted by someone else: Stopped",
            ws(json!({"phase": "Running", "podStarts": 1}), json!({})),
            None,
            "UpdateStatus(Some(Stopped))".into(),
        ),
        (
            "workspace deleted: stop the pod gracefully",
            ws(
                json!({"phase": "Stopping", "podStarts": 1, "podName": "ws-alice", "nodeName": "node-1", "observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "False", "reason": "PodEnded", "message": "the workspace pod has ended", "observedGeneration": 1, "lastTransitionTime": NOW}]}),
                json!({"deletionTimestamp": NOW}),
            ),
            Some(running_pod.clone()),
            "DeletePod { grace_seconds: None, cause: \"the Workspace is being deleted\" }".into(),
        ),
        (
            "workspace deleted: record Stopping first",
            ws(
                json!({"phase": "Running", "podStarts": 1}),
                json!({"deletionTimestamp": NOW}),
            ),
            Some(running_pod),
            "UpdateStatus(Some(Stopping))".into(),
        ),
        (
            "disposal: containers still running",
            ws(
                json!({"phase": "Stopping", "podStarts": 1, "podName": "ws-alice", "nodeName": "node-1", "observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "False", "reason": "PodEnded", "message": "the workspace pod has ended", "observedGeneration": 1, "lastTransitionTime": NOW}]}),
                json!({}),
            ),
            Some(deleting_running_pod),
            "WaitUntil(2026-12-01T12:01:00Z)".into(),
        ),
        (
            "disposal: timeout passed",
            ws(
                json!({"phase": "Stopping", "podStarts": 1, "podName": "ws-alice", "nodeName": "node-1", "observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "False", "reason": "PodEnded", "message": "the workspace pod has ended", "observedGeneration": 1, "lastTransitionTime": NOW}]}),
                json!({}),
            ),
            Some(overdue_pod),
            "ReleasePod".into(),
        ),
        (
            "drained before its first pod: Stopped, never started",
            ws(
                json!(null),
                json!({"annotations": {"lifeguard.dev/drained-by": "upgrade"}}),
            ),
            None,
            "UpdateStatus(Some(Stopped))".into(),
        ),
        (
            "drained while its first pod could not be created: Stopped",
            ws(
                json!({"phase": "Pending"}),
                json!({"annotations": {"lifeguard.dev/drained-by": "upgrade"}}),
            ),
            None,
            "UpdateStatus(Some(Stopped))".into(),
        ),
        (
            "drained between a rejection and its replacement: Stopped",
            ws(
                gone("2026-12-01T11:59:00Z", 1),
                json!({"annotations": {"lifeguard.dev/drained-by": "upgrade"}}),
            ),
            None,
            "UpdateStatus(Some(Stopped))".into(),
        ),
        (
            "drained and Stopped: stays stopped after the window",
            ws(
                json!({"phase": "Stopped"}),
                json!({"annotations": {"lifeguard.dev/drained-by": "upgrade"}}),
            ),
            None,
            "Idle".into(),
        ),
        (
            "workspace deleted, pod gone: drop our finalizer",
            ws(
                json!({"phase": "Stopping"}),
                json!({"deletionTimestamp": NOW}),
            ),
            None,
            "RemoveWorkspaceFinalizer".into(),
        ),
    ];
    for (what, ws, pod, expected) in cases {
        let action = plan(&ws, pod.as_ref(), now(), &settings);
        assert_eq!(kind(&action), expected, "{what}");
    }
}

#[test]
fn rejection_record_carries_the_kubelet_facts() {
    let workspace = ws(json!({"podStarts": 1, "phase": "Creating"}), json!({}));
    let rejected = pod(
        json!({"phase": "Failed", "reason": "OutOfcpu", "message": "Node didn't have enough resource: cpu"}),
        json!({}),
    );
    let Action::RecordRejection(status) =
        plan(&workspace, Some(&rejected), now(), &Settings::default())
    else {
        panic!("expected RecordRejection");
    };
    let r = status.last_rejection.expect("recorded");
    assert_eq!(
        (r.reason.as_str(), r.node.as_str(), r.pod_uid.as_deref()),
        ("OutOfcpu", "node-1", Some("pod-uid-1"))
    );
    assert_eq!(status.phase, Some(WorkspacePhase::Pending));
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "PodRejected" && c.status == "True")
    );
}

#[test]
fn counters_are_recovered_from_the_pod_when_a_status_write_was_lost() {
    // Created as re-creation 2 (start 3), but the status still says 1 and 2.
    let workspace = ws(
        json!({"podStarts": 2, "podRecreated": 1, "phase": "Pending"}),
        json!({}),
    );
    let replacement = pod(
        json!({"phase": "Pending"}),
        json!({"annotations": {"lifeguard.dev/start": "3", "lifeguard.dev/recreation": "2"}}),
    );
    let Action::UpdateStatus(status) =
        plan(&workspace, Some(&replacement), now(), &Settings::default())
    else {
        panic!("expected UpdateStatus");
    };
    assert_eq!((status.pod_starts, status.pod_recreated), (3, 2));
}

#[test]
fn giving_up_says_why() {
    let settings = Settings {
        max_retries: 1,
        backoff: SignedDuration::from_secs(1),
        ..Settings::default()
    };
    let workspace = ws(
        json!({"phase": "Pending", "podStarts": 2, "podRecreated": 1, "podDeletionTime": "2026-12-01T11:00:00Z",
        "conditions": rejected_condition("True"),
        "lastRejection": {"reason": "OutOfmemory", "message": "", "node": "n", "time": "2026-12-01T11:00:00Z"}}),
        json!({}),
    );
    let Action::GiveUp(status) = plan(&workspace, None, now(), &settings) else {
        panic!("expected GiveUp");
    };
    assert_eq!(status.phase, Some(WorkspacePhase::Failed));
    let failed = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Failed")
        .expect("Failed condition");
    assert!(
        failed.message.contains("OutOfmemory") && failed.message.contains("1 re-creations"),
        "{}",
        failed.message
    );
}

#[test]
fn deletion_events_say_why() {
    // The rejected case is a row of the plan table above (`DeletePod { .., cause }`).
    let cases = vec![
        (
            "workspace deleted",
            ws(json!({}), json!({"deletionTimestamp": NOW})),
            "Running",
            "the Workspace is being deleted",
        ),
        (
            "drained",
            ws(
                json!({}),
                json!({"annotations": {"lifeguard.dev/drained-by": "upgrade"}}),
            ),
            "Running",
            "maintenance window upgrade drains it",
        ),
        (
            "ended",
            ws(json!({}), json!({})),
            "Failed",
            "it ended (Failed)",
        ),
    ];
    for (what, ws, phase, expected) in cases {
        assert_eq!(stop_cause(&ws, phase), expected, "{what}");
    }
}

#[test]
fn a_drained_workspace_without_a_pod_stops_and_no_longer_holds_up_the_drain() {
    let window: lifeguard_api::MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": "upgrade"},
        "spec": {"start": "2026-12-01T11:00:00Z", "end": "2026-12-01T13:00:00Z", "drain": true}
    }))
    .expect("window literal");
    let window = lifeguard_api::window::CompiledWindow::compile(&window).expect("valid window");
    let no_labels = std::collections::BTreeMap::new();
    let mut workspace = ws(
        json!({"phase": "Pending"}),
        json!({"annotations": {"lifeguard.dev/drained-by": "upgrade"}}),
    );
    assert!(lifeguard_api::drain::still_remaining(
        &window, &workspace, &no_labels
    ));
    let Action::UpdateStatus(status) = plan(&workspace, None, now(), &Settings::default()) else {
        panic!("expected UpdateStatus");
    };
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready condition");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "Drained")
    );
    workspace.status = Some(*status);
    assert!(!lifeguard_api::drain::still_remaining(
        &window, &workspace, &no_labels
    ));
    assert_eq!(
        kind(&plan(&workspace, None, now(), &Settings::default())),
        "Idle",
        "once Stopped it is never started, also after the window"
    );
}
