use jiff::Timestamp;
use lifeguard_api::WorkspacePhase::{Creating, Failed, Pending, Running, Stopped, Stopping};
use serde_json::json;

use super::*;
use crate::workspace::plan::plan_tests::{pod, ws};

#[test]
fn which_status_writes_finish_a_start() {
    for (before, after, expected) in [
        (None, Some(Creating), None),
        (None, Some(Running), Some("started")),
        (Some(Pending), Some(Running), Some("started")),
        (Some(Creating), Some(Running), Some("started")),
        (Some(Creating), Some(Failed), Some("failed")),
        (Some(Pending), Some(Failed), Some("failed")),
        (Some(Running), Some(Running), None),
        (Some(Running), Some(Failed), None),
        (Some(Running), Some(Stopping), None),
        (Some(Stopping), Some(Stopped), None),
        (Some(Failed), Some(Failed), None),
        (Some(Stopped), Some(Running), None),
    ] {
        assert_eq!(
            finished_start(before, after),
            expected,
            "{before:?} -> {after:?}"
        );
    }
}

#[test]
fn a_start_is_timed_from_the_workspace_or_its_replacement_pod() {
    let now: Timestamp = "2026-12-01T12:00:30Z".parse().unwrap_or_default();
    let created = json!({"creationTimestamp": "2026-12-01T12:00:00Z"});
    let first = ws(
        json!({"phase": "Creating", "podStarts": 1}),
        created.clone(),
    );
    let running =
        serde_json::from_value(json!({"phase": "Running", "podStarts": 1})).unwrap_or_default();
    assert_eq!(
        observation(&first, None, &running, now),
        Some(("started", 30.0))
    );

    let replaced = ws(
        json!({"phase": "Creating", "podStarts": 2, "podRecreated": 1}),
        created,
    );
    let replacement = pod(
        json!({}),
        json!({"creationTimestamp": "2026-12-01T12:00:20Z"}),
    );
    let running_again =
        serde_json::from_value(json!({"phase": "Running", "podStarts": 2, "podRecreated": 1}))
            .unwrap_or_default();
    assert_eq!(
        observation(&replaced, Some(&replacement), &running_again, now),
        Some(("started", 10.0))
    );
    let failed =
        serde_json::from_value(json!({"phase": "Failed", "podStarts": 2, "podRecreated": 1}))
            .unwrap_or_default();
    assert_eq!(
        observation(&replaced, Some(&replacement), &failed, now),
        Some(("failed", 10.0))
    );
    // Not a start: nothing observed.
    let stopped = ws(json!({"phase": "Running"}), json!({}));
    assert_eq!(observation(&stopped, None, &running, now), None);
}
