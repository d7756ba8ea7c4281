//! Table-driven tests of the next action over the states a workspace goes through.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::{Workspace, WorkspacePhase};
use serde_json::{Value, json};

use crate::workspace::plan::{Action, Settings, plan, stop_cause};

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
        Action::RecordRejectedAfterRunning(_) => "RecordRejectedAfterRunning".into(),
        Action::GiveUp(_) => "GiveUp".into(),
        Action::WaitUntil(t) => format!("WaitUntil({t})"),
        other => format!("{other:?}"),
    }
}

fn with_next_attempt(mut status: Value, due: &str) -> Value {
    status["nextAttemptTime"] = json!(due);
    status
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
            "deleting rejected pod: wait for the kubelet, until it counts as stuck",
            ws(recorded("pod-uid-1"), json!({})),
            Some(rejected_pod(
                "pod-uid-1",
                json!({"finalizers": [], "deletionTimestamp": NOW}),
            )),
            "WaitUntil(2026-12-01T12:01:00Z)".into(),
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
            "backoff not over: wait for the stored due time",
            ws(
                with_next_attempt(gone("2026-12-01T11:59:50Z", 0), "2026-12-01T12:00:05.25Z"),
                json!({}),
            ),
            None,
            "WaitUntil(2026-12-01T12:00:05.25Z)".into(),
        ),
        (
            "backoff over: same name again",
            ws(gone("2026-12-01T11:59:40Z", 0), json!({})),
            None,
            "CreatePod { start: 2, recreation: Some(1) }".into(),
        ),
        (
            "third re-creation, after 60 s",
            ws(gone("2026-12-01T11:58:58Z", 2), json!({})),
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
            Some(overdue_pod.clone()),
            "UpdateStatus(Some(Stopped))".into(),
        ),
        (
            "disposal: timeout passed, final phase recorded: release",
            ws(
                json!({"phase": "Stopped", "podStarts": 1, "podName": "ws-alice", "nodeName": "node-1", "observedGeneration": 1,
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

fn failed_pod(reason: &str, message: &str, container_statuses: Value) -> Pod {
    pod(
        json!({"phase": "Failed", "reason": reason, "message": message, "containerStatuses": container_statuses}),
        json!({}),
    )
}

fn condition<'a>(
    status: &'a lifeguard_api::WorkspaceStatus,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// The stored form of a status, as a restarted controller reads it back.
fn stored(status: &lifeguard_api::WorkspaceStatus, meta: Value) -> Workspace {
    ws(
        serde_json::to_value(status).expect("status serializes"),
        meta,
    )
}

#[test]
fn a_permanent_rejection_fails_the_workspace_at_once() {
    for message in [
        "Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted",
        "Pod forbidden sysctl: \"kernel.msgmax\" not whitelisted",
    ] {
        let workspace = ws(json!({"podStarts": 1, "phase": "Creating"}), json!({}));
        let rejected = failed_pod("SysctlForbidden", message, json!([]));
        let Action::RecordRejection(status) =
            plan(&workspace, Some(&rejected), now(), &Settings::default())
        else {
            panic!("expected RecordRejection");
        };
        assert_eq!(status.phase, Some(WorkspacePhase::Failed), "{message}");
        assert_eq!(status.pod_recreated, 0, "no retry spent");
        let failed = condition(&status, "Failed").expect("Failed condition");
        assert_eq!(
            (failed.status.as_str(), failed.reason.as_str()),
            ("True", "SysctlForbidden")
        );
        assert!(
            failed.message.contains(message) && failed.message.contains("node-1"),
            "{}",
            failed.message
        );
        let recorded = status.last_rejection.as_ref().expect("recorded");
        assert_eq!(
            recorded.class,
            Some(lifeguard_api::rejection::RejectionClass::Permanent)
        );
        // Then the pod goes at once, and nothing is ever re-created.
        let workspace = stored(&status, json!({}));
        assert_eq!(
            kind(&plan(
                &workspace,
                Some(&rejected),
                now(),
                &Settings::default()
            )),
            "ReleasePod"
        );
        assert_eq!(
            kind(&plan(&workspace, None, now(), &Settings::default())),
            "Idle"
        );
    }
}

#[test]
fn a_transient_rejection_is_recreated_after_the_backoff() {
    // Issue 12 item 9: the eviction manager refusing a pod at admission (node pressure).
    let workspace = ws(
        json!({"podStarts": 1, "phase": "Creating"}),
        json!({"uid": "ws-uid"}),
    );
    let waiting = json!([{"name": "ide", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                          "state": {"waiting": {"reason": "ContainerCreating"}}}]);
    let evicted = failed_pod(
        "Evicted",
        "Pod was rejected: The node had condition: [DiskPressure]. ",
        waiting,
    );
    let settings = Settings::default();
    let Action::RecordRejection(status) = plan(&workspace, Some(&evicted), now(), &settings) else {
        panic!("expected RecordRejection");
    };
    assert_eq!(status.phase, Some(WorkspacePhase::Pending));
    assert_eq!(
        status.last_rejection.as_ref().and_then(|r| r.class),
        Some(lifeguard_api::rejection::RejectionClass::Transient)
    );
    assert!(condition(&status, "Failed").is_none());
    // Pod gone: the due time is recorded with the deletion time ...
    let workspace = stored(&status, json!({"uid": "ws-uid"}));
    let Action::UpdateStatus(status) = plan(&workspace, None, now(), &settings) else {
        panic!("expected UpdateStatus");
    };
    let gone = status.pod_deletion_time.as_ref().expect("deletion time").0;
    let due = status.next_attempt_time.as_ref().expect("due time").0;
    assert_eq!(gone, now());
    let wait = due.duration_since(gone);
    assert!(
        wait >= SignedDuration::from_secs(15) && wait <= SignedDuration::from_millis(15_500),
        "first wait {wait}"
    );
    // ... kept across a restart, even one with another --backoff ...
    let workspace = stored(&status, json!({"uid": "ws-uid"}));
    let restarted = Settings {
        backoff: SignedDuration::from_secs(1),
        ..Settings::default()
    };
    let just_before = due - SignedDuration::from_millis(1);
    assert_eq!(
        kind(&plan(&workspace, None, just_before, &restarted)),
        format!("WaitUntil({due})")
    );
    // ... and then the same-named replacement comes.
    assert_eq!(
        kind(&plan(&workspace, None, due, &restarted)),
        "CreatePod { start: 2, recreation: Some(1) }"
    );
}

#[test]
fn later_replacements_wait_longer() {
    let settings = Settings::default();
    let mut waits = Vec::new();
    for recreated in 0..3 {
        let workspace = ws(
            json!({"phase": "Pending", "podStarts": 1 + recreated, "podRecreated": recreated,
                   "conditions": rejected_condition("True")}),
            json!({"uid": "ws-uid"}),
        );
        let Action::UpdateStatus(status) = plan(&workspace, None, now(), &settings) else {
            panic!("expected UpdateStatus");
        };
        let due = status.next_attempt_time.expect("due time").0;
        waits.push(due.duration_since(now()).as_millis());
    }
    // 15 s, 30 s, 60 s, each with up to a tenth more of jitter.
    for (wait, base) in waits.iter().zip([15_000, 30_000, 60_000]) {
        assert!(*wait >= base && *wait <= base + base / 10, "{waits:?}");
    }
    // No retry left: no due time, the next step gives up.
    let workspace = ws(
        json!({"phase": "Pending", "podStarts": 4, "podRecreated": 3, "conditions": rejected_condition("True")}),
        json!({}),
    );
    let Action::UpdateStatus(status) = plan(&workspace, None, now(), &settings) else {
        panic!("expected UpdateStatus");
    };
    assert!(status.next_attempt_time.is_none());
}

#[test]
fn a_refusal_after_running_is_reported_and_not_recreated() {
    let ran = json!([{"name": "ide", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                      "state": {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": "2026-12-01T10:00:00Z"}}}]);
    let refused = failed_pod(
        "OutOfcpu",
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 3500, capacity: 4000",
        ran,
    );
    let workspace = ws(json!({"podStarts": 1, "phase": "Running"}), json!({}));
    let settings = Settings::default();
    let Action::RecordRejectedAfterRunning(status) =
        plan(&workspace, Some(&refused), now(), &settings)
    else {
        panic!("expected RecordRejectedAfterRunning");
    };
    assert_eq!(
        status.phase,
        Some(WorkspacePhase::Stopping),
        "Failed once the pod is released"
    );
    let failed = condition(&status, "Failed").expect("Failed condition");
    assert_eq!(failed.reason, "RejectedAfterRunning");
    assert!(failed.message.contains("OutOfcpu"), "{}", failed.message);
    assert_eq!(
        status.last_rejection.as_ref().map(|r| r.reason.as_str()),
        Some("OutOfcpu")
    );
    assert_eq!(status.pod_recreated, 0);
    // Recorded once; then the pod is disposed of like any ended pod, never replaced.
    let workspace = stored(&status, json!({}));
    assert_eq!(
        kind(&plan(&workspace, Some(&refused), now(), &settings)),
        "DeletePod { grace_seconds: None, cause: \"it ended (Failed)\" }"
    );
    assert_eq!(
        kind(&plan(&workspace, None, now(), &settings)),
        "UpdateStatus(Some(Failed))",
        "gone: Failed, and never replaced"
    );
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
