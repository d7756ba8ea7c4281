//! An evicted workspace: its pod is stopped as a drain stops one, then the workspace
//! starts again (or stays stopped, `onEviction: Stop`), once per eviction.

use lifeguard_api::WorkspacePhase;
use serde_json::{Value, json};

use crate::workspace::plan::plan_tests::{kind, now, pod, ws};
use crate::workspace::plan::{Action, Settings, plan};

fn record(pod_uid: &str) -> String {
    json!({"by": "kubernetes-admin", "node": "node-1", "podUID": pod_uid,
           "time": "2026-12-01T11:59:00Z"})
    .to_string()
}

fn evicted(pod_uid: &str) -> Value {
    json!({"annotations": {"lifeguard.dev/eviction": record(pod_uid)}})
}

fn running() -> Value {
    json!({"phase": "Running", "podStarts": 1, "podName": "ws-alice", "nodeName": "node-1"})
}

fn running_pod() -> k8s_openapi::api::core::v1::Pod {
    pod(json!({"phase": "Running"}), json!({}))
}

/// Plans over the status writes until the workspace asks for something else.
fn settle(
    mut workspace: lifeguard_api::Workspace,
    pod: Option<&k8s_openapi::api::core::v1::Pod>,
) -> Action {
    let settings = Settings::default();
    for _ in 0..5 {
        match plan(&workspace, pod, now(), &settings) {
            Action::UpdateStatus(status) => workspace.status = Some(*status),
            other => return other,
        }
    }
    panic!("no action after five status writes");
}

#[test]
fn an_evicted_pod_is_stopped_gracefully_naming_who_evicted_it() {
    let action = settle(ws(running(), evicted("pod-uid-1")), Some(&running_pod()));
    let Action::DeletePod {
        grace_seconds,
        cause,
    } = action
    else {
        panic!("want a graceful delete, got {action:?}");
    };
    assert_eq!(grace_seconds, None, "the pod's own grace period");
    assert_eq!(
        cause,
        "kubernetes-admin evicted it from node node-1; lifeguard saves it before it leaves the node"
    );
}

#[test]
fn only_the_evicted_pod_is_stopped() {
    let cases = [
        (
            "an eviction of an earlier pod of the name",
            evicted("pod-uid-0"),
        ),
        (
            "an unreadable record",
            json!({"annotations": {"lifeguard.dev/eviction": "{"}}),
        ),
        ("no eviction", json!({})),
    ];
    for (what, meta) in cases {
        let action = settle(ws(running(), meta), Some(&running_pod()));
        assert!(
            !matches!(action, Action::DeletePod { .. }),
            "{what}: {action:?}"
        );
    }
}

#[test]
fn once_the_evicted_pod_is_gone_the_workspace_starts_again_once() {
    let settings = Settings::default();
    let stopped = json!({"phase": "Stopped", "podStarts": 1, "nodeName": "node-1",
                         "conditions": [{"type": "DisposalConfirmed", "status": "True",
                                         "reason": "Saved", "message": "the backup agent saved it",
                                         "lastTransitionTime": "2026-12-01T11:59:40Z"}]});
    let action = plan(&ws(stopped, evicted("pod-uid-1")), None, now(), &settings);
    let Action::RecordEviction { status, note } = action else {
        panic!("want the eviction recorded, got {action:?}");
    };
    assert_eq!(status.phase, Some(WorkspacePhase::Pending));
    assert_eq!(
        status.last_eviction.as_ref().map(|r| r.pod_uid.as_str()),
        Some("pod-uid-1")
    );
    assert_eq!(
        note,
        "kubernetes-admin evicted it from node node-1; its work was saved, and it starts again on another node"
    );
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "Evicted")
    );

    // Next pass: the pod is created again, its start number after the last one.
    let pending = serde_json::to_value(&*status).expect("status");
    let restarting = ws(pending, evicted("pod-uid-1"));
    assert_eq!(
        kind(&plan(&restarting, None, now(), &settings)),
        "CreatePod { start: 2, recreation: None }"
    );
    // The new pod (another UID) is not stopped by the old eviction.
    let mut running = restarting.clone();
    running.status = Some(serde_json::from_value(running_status()).expect("status"));
    let new_pod = pod(json!({"phase": "Running"}), json!({"uid": "pod-uid-2"}));
    assert!(!matches!(
        settle(running, Some(&new_pod)),
        Action::DeletePod { .. }
    ));
}

fn running_status() -> Value {
    json!({"phase": "Running", "podStarts": 2, "podName": "ws-alice", "nodeName": "node-2",
           "lastEviction": serde_json::from_str::<Value>(&record("pod-uid-1")).expect("json")})
}

#[test]
fn what_a_workspace_without_its_pod_does_about_an_eviction() {
    let settings = Settings::default();
    let stopped = json!({"phase": "Stopped", "podStarts": 1});
    let acted = json!({"phase": "Stopped", "podStarts": 1,
                       "lastEviction": serde_json::from_str::<Value>(&record("pod-uid-1")).expect("json")});
    let mut stop_spec = ws(stopped.clone(), evicted("pod-uid-1"));
    stop_spec.spec.on_eviction = Some(lifeguard_api::eviction::OnEviction::Stop);
    let cases = [
        (
            "onEviction: Stop",
            stop_spec,
            "RecordEviction(Some(Stopped))",
        ),
        (
            "acted on already, stopped again since",
            ws(acted, evicted("pod-uid-1")),
            "Idle",
        ),
        (
            "a drain window stopped it too: the window's stop stands",
            ws(
                stopped.clone(),
                json!({"annotations": {"lifeguard.dev/eviction": record("pod-uid-1"),
                                       "lifeguard.dev/drained-by": "upgrade"}}),
            ),
            "Idle",
        ),
        (
            "the Workspace is being deleted",
            ws(
                stopped,
                json!({"annotations": {"lifeguard.dev/eviction": record("pod-uid-1")},
                       "deletionTimestamp": "2026-12-01T11:59:30Z"}),
            ),
            "RemoveWorkspaceFinalizer",
        ),
    ];
    for (what, workspace, want) in cases {
        let action = plan(&workspace, None, now(), &settings);
        let got = match &action {
            Action::RecordEviction { status, .. } => format!("RecordEviction({:?})", status.phase),
            other => kind(other),
        };
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn a_node_stops_at_most_its_budget_of_evicted_pods_at_once() {
    use crate::workspace::eviction::budget_allows;
    let held_deleting = || {
        pod(
            json!({"phase": "Running"}),
            json!({"deletionTimestamp": "2026-12-01T11:59:50Z"}),
        )
    };
    let released_deleting = || {
        pod(
            json!({"phase": "Succeeded"}),
            json!({"deletionTimestamp": "2026-12-01T11:59:50Z", "finalizers": []}),
        )
    };
    let cases = [
        (
            "nothing being stopped",
            vec![running_pod(), running_pod()],
            1,
            true,
        ),
        (
            "one being saved, budget 1",
            vec![held_deleting(), running_pod()],
            1,
            false,
        ),
        (
            "one being saved, budget 2",
            vec![held_deleting(), running_pod()],
            2,
            true,
        ),
        (
            "two being saved, budget 2",
            vec![held_deleting(), held_deleting()],
            2,
            false,
        ),
        (
            "released pods no longer count",
            vec![released_deleting(), released_deleting()],
            1,
            true,
        ),
        (
            "one told of its stop and waiting out its notice holds a slot",
            vec![noticed_pod(), running_pod()],
            1,
            false,
        ),
        (
            "a told pod lifeguard released no longer counts",
            vec![pod(
                json!({"phase": "Succeeded"}),
                json!({"finalizers": [],
                       "annotations": {"lifeguard.dev/eviction-notice": notice_json("2026-12-01T12:00:30Z")}}),
            )],
            1,
            true,
        ),
    ];
    for (what, on_node, budget, want) in cases {
        assert_eq!(budget_allows(&on_node, budget), want, "{what}");
    }
}

fn notice_json(stop_at: &str) -> String {
    json!({"by": "kubernetes-admin", "node": "node-1", "evictedAt": "2026-12-01T11:59:00Z",
           "stopAt": stop_at, "message": "kubernetes-admin evicted it from node node-1"})
    .to_string()
}

fn noticed_pod() -> k8s_openapi::api::core::v1::Pod {
    pod(
        json!({"phase": "Running"}),
        json!({"annotations": {"lifeguard.dev/eviction-notice": notice_json("2026-12-01T12:00:30Z")}}),
    )
}

#[test]
fn the_cluster_stops_at_most_its_budget_of_evicted_pods_at_once() {
    use crate::workspace::eviction::cluster_budget_allows;
    let cases = [
        ("none in flight", 0, 10, true),
        ("one short of the budget", 9, 10, true),
        ("the budget reached", 10, 10, false),
        (
            "over it (a replica's stops before a restart)",
            12,
            10,
            false,
        ),
        ("0 is no limit", 5_000, 0, true),
    ];
    for (what, in_flight, budget, want) in cases {
        assert_eq!(cluster_budget_allows(in_flight, budget), want, "{what}");
    }
}

#[test]
fn the_cluster_count_adds_recent_notices_the_pod_watch_has_not_shown_yet() {
    use crate::workspace::eviction::cluster_in_flight;
    use jiff::SignedDuration;
    let key = |n: &str| ("team".to_string(), n.to_string());
    let at = |s: &str| -> jiff::Timestamp { s.parse().expect("time") };
    let horizon = SignedDuration::from_secs(60);
    let cases = [
        ("nothing", vec![], vec![], 0),
        ("the watch's pods", vec![key("a"), key("b")], vec![], 2),
        (
            "a notice the watch also shows counts once",
            vec![key("a")],
            vec![(key("a"), "2026-12-01T11:59:59Z")],
            1,
        ),
        (
            "a notice the watch does not show yet counts",
            vec![key("a")],
            vec![(key("b"), "2026-12-01T11:59:30Z")],
            2,
        ),
        (
            "a notice older than the horizon is left to the watch",
            vec![],
            vec![(key("b"), "2026-12-01T11:58:59Z")],
            0,
        ),
    ];
    for (what, cached, told, want) in cases {
        let told = told.into_iter().map(|(k, t)| (k, at(t))).collect();
        assert_eq!(
            cluster_in_flight(&cached, &told, now(), horizon),
            want,
            "{what}"
        );
    }
}

#[test]
fn an_evicted_pod_is_told_first_and_stopped_when_its_notice_is_over() {
    use crate::workspace::eviction::{NoticeStep, notice_step, stopping};
    use jiff::SignedDuration;
    let workspace = ws(running(), evicted("pod-uid-1"));
    let told_until = |stop_at: &str| {
        pod(
            json!({"phase": "Running"}),
            json!({"annotations": {"lifeguard.dev/eviction-notice": notice_json(stop_at)}}),
        )
    };
    let cases = [
        (
            "not told, no notice: told, stop now",
            running_pod(),
            SignedDuration::ZERO,
            "give 2026-12-01T12:00:00Z",
        ),
        (
            "not told, 30s notice",
            running_pod(),
            SignedDuration::from_secs(30),
            "give 2026-12-01T12:00:30Z",
        ),
        (
            "told, the notice runs",
            told_until("2026-12-01T12:00:30Z"),
            SignedDuration::from_secs(30),
            "wait 2026-12-01T12:00:30Z",
        ),
        (
            "told, a shorter flag since does not cut the notice given",
            told_until("2026-12-01T12:00:30Z"),
            SignedDuration::ZERO,
            "wait 2026-12-01T12:00:30Z",
        ),
        (
            "told, the notice is over",
            told_until("2026-12-01T12:00:00Z"),
            SignedDuration::from_secs(30),
            "stop",
        ),
        (
            "an unreadable notice is given again",
            pod(
                json!({"phase": "Running"}),
                json!({"annotations": {"lifeguard.dev/eviction-notice": "{"}}),
            ),
            SignedDuration::ZERO,
            "give 2026-12-01T12:00:00Z",
        ),
    ];
    for (what, p, notice, want) in cases {
        let record = stopping(&workspace, &p).expect("the pod's eviction");
        let got = match notice_step(&workspace, &p, &record, now(), notice) {
            NoticeStep::Give(n) => {
                assert_eq!(n.by, "kubernetes-admin", "{what}");
                assert_eq!(n.node, "node-1", "{what}");
                format!("give {}", n.stop_at.0)
            }
            NoticeStep::Wait(t) => format!("wait {t}"),
            NoticeStep::Stop => "stop".into(),
        };
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn only_an_evictions_own_stop_waits_for_the_budget() {
    use crate::workspace::eviction::budgeted;
    let cases = [
        ("evicted", ws(running(), evicted("pod-uid-1")), true),
        (
            "an earlier pod's eviction",
            ws(running(), evicted("pod-uid-0")),
            false,
        ),
        (
            "drained by a window too: the window's budget counts it",
            ws(
                running(),
                json!({"annotations": {"lifeguard.dev/eviction": record("pod-uid-1"),
                                       "lifeguard.dev/drained-by": "upgrade"}}),
            ),
            false,
        ),
        (
            "the Workspace is being deleted",
            ws(
                running(),
                json!({"annotations": {"lifeguard.dev/eviction": record("pod-uid-1")},
                       "deletionTimestamp": "2026-12-01T11:59:30Z"}),
            ),
            false,
        ),
    ];
    for (what, workspace, want) in cases {
        assert_eq!(budgeted(&workspace, &running_pod()), want, "{what}");
    }
}

#[test]
fn the_eviction_says_what_became_of_the_work() {
    let settings = Settings::default();
    let confirmed = |status: &str, reason: &str| {
        json!({"phase": "Stopped", "podStarts": 1,
               "conditions": [{"type": "DisposalConfirmed", "status": status, "reason": reason,
                               "message": "m", "lastTransitionTime": "2026-12-01T11:59:40Z"}]})
    };
    let cases = [
        (
            "saved",
            confirmed("True", "Saved"),
            "its work was saved, and",
        ),
        (
            "the agent's wait ran out",
            confirmed("False", "TimedOut"),
            "its work may be lost (TimedOut: m), and",
        ),
        (
            "no confirmation asked",
            json!({"phase": "Stopped", "podStarts": 1}),
            "it was stopped gracefully, and",
        ),
    ];
    for (what, status, want) in cases {
        let action = plan(&ws(status, evicted("pod-uid-1")), None, now(), &settings);
        let Action::RecordEviction { note, .. } = action else {
            panic!("{what}: {action:?}");
        };
        assert!(note.contains(want), "{what}: {note}");
    }
}

#[test]
fn a_new_pod_waits_for_its_own_disposal_answer() {
    let settings = Settings::default();
    let pending = json!({"phase": "Pending", "podStarts": 1,
                         "lastEviction": serde_json::from_str::<Value>(&record("pod-uid-1")).expect("json"),
                         "conditions": [{"type": "DisposalConfirmed", "status": "True", "reason": "Saved",
                                         "message": "m", "lastTransitionTime": "2026-12-01T11:59:40Z"}]});
    let workspace = ws(pending, evicted("pod-uid-1"));
    let created = pod(json!({"phase": "Pending"}), json!({"uid": "pod-uid-2"}));
    let status =
        crate::workspace::plan::created_status(&workspace, &created, 2, None, now(), &settings);
    assert!(
        !status
            .conditions
            .iter()
            .any(|c| c.type_ == "DisposalConfirmed"),
        "the earlier pod's outcome would let this pod go unsaved: {:?}",
        status.conditions
    );
}
