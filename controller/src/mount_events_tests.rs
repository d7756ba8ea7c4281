use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use serde_json::json;

use lifeguard_runtime::events::MAX_NOTE_BYTES;

use super::*;

fn event(name: &str, reason: &str, kind: &str, last: &str, message: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "team-a"},
        "involvedObject": {"kind": kind, "namespace": "team-a", "name": "ws-alice", "uid": "pod-1"},
        "reason": reason, "message": message, "lastTimestamp": last,
    }))
    .expect("event literal")
}

fn at(s: &str) -> Timestamp {
    s.parse().expect("timestamp literal")
}

fn failure(event: &str, at_: &str, message: &str) -> MountFailure {
    MountFailure {
        event: event.into(),
        reason: "FailedMount".into(),
        message: message.into(),
        at: at(at_),
    }
}

#[test]
fn read_takes_only_mount_failures_of_pods() {
    let cases = [
        ("FailedMount", "Pod", true),
        ("FailedAttachVolume", "Pod", true),
        ("FailedScheduling", "Pod", false),
        ("BackOff", "Pod", false),
        ("FailedMount", "Node", false),
    ];
    for (reason, kind, kept) in cases {
        let e = event("e1", reason, kind, "2026-11-27T10:00:00Z", "m");
        assert_eq!(read(&e).is_some(), kept, "{reason} of a {kind}");
    }
    let (uid, namespace, name, f) = read(&event(
        "e1",
        "FailedMount",
        "Pod",
        "2026-11-27T10:00:00Z",
        r#"MountVolume.SetUp failed for volume "token" : secret "late-token" not found"#,
    ))
    .expect("a mount failure");
    assert_eq!(
        (uid.as_str(), namespace.as_str(), name.as_str()),
        ("pod-1", "team-a", "ws-alice")
    );
    assert_eq!(f.reason, "FailedMount");
    assert_eq!(f.at, at("2026-11-27T10:00:00Z"));
    assert!(f.message.contains("late-token"));
}

#[test]
fn read_cuts_a_long_message_on_a_character_boundary() {
    let long = "é".repeat(MAX_NOTE_BYTES);
    let (.., f) = read(&event(
        "e1",
        "FailedMount",
        "Pod",
        "2026-11-27T10:00:00Z",
        &long,
    ))
    .expect("a mount failure");
    assert!(f.message.len() <= MAX_NOTE_BYTES);
    let kept = f.message.strip_suffix('…').expect("the cut is marked");
    assert!(kept.chars().all(|c| c == 'é'));
}

#[test]
fn the_latest_failure_of_a_pod_wins_and_says_whether_anything_changed() {
    let mut latest = Latest::default();
    assert!(latest.record("pod-1", failure("e1", "2026-11-27T10:00:00Z", "first")));
    assert!(
        !latest.record("pod-1", failure("e1", "2026-11-27T10:00:00Z", "first")),
        "the same Event again (a relist) changes nothing"
    );
    assert!(
        !latest.record("pod-1", failure("e0", "2026-11-27T09:00:00Z", "older")),
        "an older failure does not replace a newer one"
    );
    assert_eq!(
        latest.get("pod-1").map(|f| f.message.as_str()),
        Some("first")
    );
    assert!(
        latest.record("pod-1", failure("e1", "2026-11-27T10:02:00Z", "repeated")),
        "the kubelet repeating the failure (a later lastTimestamp) is news"
    );
    assert_eq!(
        latest.get("pod-1").map(|f| f.message.as_str()),
        Some("repeated")
    );
}

#[test]
fn a_deleted_event_is_forgotten_only_if_it_is_the_one_held() {
    let mut latest = Latest::default();
    latest.record("pod-1", failure("e2", "2026-11-27T10:00:00Z", "held"));
    latest.forget("pod-1", "e1");
    assert!(
        latest.get("pod-1").is_some(),
        "another Event of the pod went"
    );
    latest.forget("pod-1", "e2");
    assert!(latest.get("pod-1").is_none());
    assert!(latest.is_empty());
}

#[test]
fn the_oldest_failure_goes_when_the_bound_is_reached() {
    let mut latest = Latest::default();
    let base = at("2026-11-27T00:00:00Z");
    for i in 0..MAX_PODS {
        let t = base
            .checked_add(jiff::SignedDuration::from_secs(i as i64 + 1))
            .expect("in range");
        latest.record(
            &format!("pod-{i}"),
            MountFailure {
                at: t,
                ..failure("e", "2026-11-27T00:00:00Z", "m")
            },
        );
    }
    assert_eq!(latest.len(), MAX_PODS);
    latest.record("pod-new", failure("e", "2026-11-27T12:00:00Z", "m"));
    assert_eq!(latest.len(), MAX_PODS, "bounded");
    assert!(latest.get("pod-0").is_none(), "the oldest went");
    assert!(latest.get("pod-1").is_some());
    assert!(latest.get("pod-new").is_some());
}
