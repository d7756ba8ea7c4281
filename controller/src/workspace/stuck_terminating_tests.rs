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
