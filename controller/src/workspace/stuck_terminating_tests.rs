use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::*;
use crate::workspace::plan::plan_tests::pod;

fn at(t: &str) -> Timestamp {
    t.parse().expect("time")
}

fn deleting(finalizers: Value, containers: Value) -> Pod {
    pod(
        json!({"phase": "Running", "containerStatuses": containers}),
        json!({"deletionTimestamp": "2026-12-01T12:00:00Z", "deletionGracePeriodSeconds": 30,
               "finalizers": finalizers}),
    )
}

fn ended() -> Value {
    json!([{"name": "ide", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0}}}])
}

fn running() -> Value {
    json!([{"name": "ide", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
            "state": {"running": {}}}])
}

#[test]
fn a_released_pod_with_nothing_running_is_force_deleted_after_the_bound() {
    let settings = Settings::default();
    let bound = settings.stuck_terminating_after;
    assert_eq!(bound, SignedDuration::from_mins(1));
    // (case, pod, now, plan's action, expected)
    let cases: Vec<(&str, Pod, &str, Action, &str)> = vec![
        (
            "within the bound: wait for it",
            deleting(json!([]), ended()),
            "2026-12-01T12:00:30Z",
            Action::Idle,
            "WaitUntil(2026-12-01T12:01:00Z)",
        ),
        (
            "past the bound, containers ended",
            deleting(json!([]), ended()),
            "2026-12-01T12:01:00Z",
            Action::Idle,
            "ForceDeletePod",
        ),
        (
            "past the bound, never started",
            deleting(json!([]), json!([])),
            "2026-12-01T12:05:00Z",
            Action::Idle,
            "ForceDeletePod",
        ),
        (
            "a container still runs (its node may be lost)",
            deleting(json!([]), running()),
            "2026-12-01T13:00:00Z",
            Action::Idle,
            "Idle",
        ),
        (
            "our finalizer: disposal comes first",
            deleting(json!(["lifeguard.dev/disposal"]), ended()),
            "2026-12-01T13:00:00Z",
            Action::Idle,
            "Idle",
        ),
        (
            "a foreign finalizer holds it",
            deleting(json!(["example.com/keep"]), ended()),
            "2026-12-01T13:00:00Z",
            Action::Idle,
            "Idle",
        ),
        (
            "plan has something to do",
            deleting(json!([]), ended()),
            "2026-12-01T13:00:00Z",
            Action::ReleasePod,
            "ReleasePod",
        ),
        (
            "not deleting",
            pod(json!({"phase": "Running"}), json!({"finalizers": []})),
            "2026-12-01T13:00:00Z",
            Action::Idle,
            "Idle",
        ),
    ];
    for (case, pod, now, action, want) in cases {
        let got = match check(&pod, action, at(now), &settings) {
            Action::WaitUntil(t) => format!("WaitUntil({t})"),
            Action::ForceDeletePod { cause } => {
                assert!(
                    cause.contains("1m after its grace period"),
                    "{case}: {cause}"
                );
                "ForceDeletePod".to_string()
            }
            other => format!("{other:?}"),
        };
        assert_eq!(got, want, "{case}");
    }
}

/// A pod of one container (`ide`) that lifeguard released (annotation and no finalizer),
/// with these container statuses.
fn released(containers: Value) -> Pod {
    let mut pod = pod(
        json!({"phase": "Running", "containerStatuses": containers}),
        json!({"deletionTimestamp": "2026-12-01T12:00:00Z", "deletionGracePeriodSeconds": 30,
               "finalizers": [], "annotations": {"lifeguard.dev/released": "2026-12-01T12:00:03Z"}}),
    );
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers = vec![
            serde_json::from_value(json!({"name": "ide", "image": "x"}))
                .expect("container literal"),
        ];
    }
    pod
}

#[test]
fn a_released_pod_is_removed_as_soon_as_the_kubelet_reports_it_stopped() {
    let settings = Settings::default();
    // Well within the stuck bound: this is the routine end of a stop, not a stuck pod.
    let now = at("2026-12-01T12:00:04Z");
    // (case, pod, plan's action, expected)
    let cases: Vec<(&str, Pod, Action, &str)> = vec![
        (
            "released, every container terminated",
            released(ended()),
            Action::Idle,
            "RemoveStoppedPod",
        ),
        (
            "released, its container removed (older kubelets then report it waiting)",
            released(
                json!([{"name": "ide", "image": "x", "imageID": "", "ready": false,
                             "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]),
            ),
            Action::Idle,
            "RemoveStoppedPod",
        ),
        (
            "released, a container still running: the kubelet stops it first",
            released(running()),
            Action::Idle,
            "Idle",
        ),
        (
            "released, no container reported yet: wait for the kubelet, up to the bound",
            released(json!([])),
            Action::Idle,
            "WaitUntil(2026-12-01T12:01:00Z)",
        ),
        (
            "stopped but not released by lifeguard: only the stuck bound applies",
            deleting(json!([]), ended()),
            Action::Idle,
            "WaitUntil(2026-12-01T12:01:00Z)",
        ),
        (
            "the plan has something to do first",
            released(ended()),
            Action::ReleasePod,
            "ReleasePod",
        ),
    ];
    for (case, pod, action, want) in cases {
        let got = match check(&pod, action, now, &settings) {
            Action::WaitUntil(t) => format!("WaitUntil({t})"),
            other => format!("{other:?}"),
        };
        assert_eq!(got, want, "{case}");
    }
}
