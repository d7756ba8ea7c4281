use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::{Value, json};

use super::*;

const NOW: &str = "2026-12-01T12:00:00Z";

fn now() -> Timestamp {
    NOW.parse().expect("time literal")
}

fn meta(value: Value) -> ObjectMeta {
    serde_json::from_value(value).expect("metadata literal")
}

/// Disposal timeout 2m (the default); the backup agent's wait 10m.
fn settings() -> Settings {
    Settings {
        disposal_confirm_timeout: SignedDuration::from_mins(10),
        ..Settings::default()
    }
}

fn owned_by(uid: &str, controller: bool) -> Value {
    json!([{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "alice",
            "uid": uid, "controller": controller}])
}

#[test]
fn only_a_deleting_pod_holding_our_finalizer_is_a_stopping_pod() {
    let cases = [
        (
            "deleting, ours",
            json!({"finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": NOW}),
            true,
        ),
        (
            "deleting, ours beside a foreign one",
            json!({"finalizers": ["example.com/keep", "lifeguard.dev/disposal"], "deletionTimestamp": NOW}),
            true,
        ),
        (
            "running, ours",
            json!({"finalizers": ["lifeguard.dev/disposal"]}),
            false,
        ),
        (
            "deleting, only a foreign finalizer",
            json!({"finalizers": ["example.com/keep"], "deletionTimestamp": NOW}),
            false,
        ),
        (
            "deleting, no finalizer",
            json!({"deletionTimestamp": NOW}),
            false,
        ),
    ];
    for (what, value, stopping) in cases {
        assert_eq!(StoppingPod::of(&meta(value)).is_some(), stopping, "{what}");
    }
}

#[test]
fn the_owner_is_the_controlling_workspace_by_name_and_uid() {
    let base = |owners: Value| {
        meta(
            json!({"finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": NOW,
                    "ownerReferences": owners}),
        )
    };
    let controlled = StoppingPod::of(&base(owned_by("uid-1", true))).expect("stopping");
    assert_eq!(
        controlled.owner,
        Some(OwningWorkspace {
            name: "alice".into(),
            uid: "uid-1".into()
        })
    );
    let referenced_only = StoppingPod::of(&base(owned_by("uid-1", false))).expect("stopping");
    assert_eq!(
        referenced_only.owner, None,
        "only the controlling reference counts"
    );
    let stranger = StoppingPod::of(&base(json!([]))).expect("stopping");
    assert_eq!(stranger.owner, None);
}

#[test]
fn releases_pods_whose_workspace_is_gone_and_overdue_deletions_only() {
    let stopping = |since: &str, annotations: Value| {
        StoppingPod::of(&meta(json!({
            "finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": since,
            "annotations": annotations, "ownerReferences": owned_by("uid-1", true)})))
        .expect("stopping")
    };
    let required = json!({"lifeguard.dev/disposal-confirmation": "required"});
    let answered = json!({"lifeguard.dev/disposal-confirmation": "required",
                          "lifeguard.dev/disposal-result": "saved"});
    let cases = [
        (
            "workspace gone, just deleted",
            stopping(NOW, json!({})),
            false,
            Some("workspace_gone"),
        ),
        (
            "within the disposal timeout",
            stopping("2026-12-01T11:59:00Z", json!({})),
            true,
            None,
        ),
        (
            "at the disposal timeout: the reconciler's own deadline",
            stopping("2026-12-01T11:58:00Z", json!({})),
            true,
            None,
        ),
        (
            "within a disposal timeout after the reconciler's deadline",
            stopping("2026-12-01T11:56:01Z", json!({})),
            true,
            None,
        ),
        (
            "a disposal timeout after the reconciler's deadline",
            stopping("2026-12-01T11:56:00Z", json!({})),
            true,
            Some("deletion_overdue"),
        ),
        (
            "overdue",
            stopping("2026-12-01T11:50:00Z", json!({})),
            true,
            Some("deletion_overdue"),
        ),
        (
            "overdue, but waiting for its backup agent",
            stopping("2026-12-01T11:50:00Z", required.clone()),
            true,
            None,
        ),
        (
            "overdue, the agent answered",
            stopping("2026-12-01T11:50:00Z", answered),
            true,
            Some("deletion_overdue"),
        ),
        (
            "a disposal timeout, the agent's wait and a disposal timeout over: a stop reported late may have started the wait again",
            stopping("2026-12-01T11:46:00Z", required.clone()),
            true,
            None,
        ),
        (
            "just short of the agent's latest deadline and a disposal timeout",
            stopping("2026-12-01T11:36:01Z", required.clone()),
            true,
            None,
        ),
        (
            "the agent's latest deadline (two waits after the disposal timeout) and a disposal timeout over",
            stopping("2026-12-01T11:36:00Z", required.clone()),
            true,
            Some("deletion_overdue"),
        ),
        (
            "waiting for the agent, workspace gone",
            stopping(NOW, required),
            false,
            Some("workspace_gone"),
        ),
    ];
    for (what, pod, exists, expected) in cases {
        assert_eq!(
            release_cause(&pod, exists, now(), &settings()),
            expected,
            "{what}"
        );
    }
}

#[test]
fn the_api_is_asked_only_about_pods_something_can_be_done_for() {
    let stopping = |since: &str, owners: Value| {
        StoppingPod::of(&meta(json!({
            "finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": since,
            "ownerReferences": owners})))
        .expect("stopping")
    };
    let cases = [
        (
            "workspace in the cache, stopping for a minute",
            stopping("2026-12-01T11:59:00Z", owned_by("uid-1", true)),
            true,
            false,
        ),
        (
            "workspace in the cache, overdue",
            stopping("2026-12-01T11:50:00Z", owned_by("uid-1", true)),
            true,
            true,
        ),
        (
            "workspace not in the cache",
            stopping(NOW, owned_by("uid-1", true)),
            false,
            true,
        ),
        (
            "no controlling workspace, whatever the cache holds",
            stopping(NOW, json!([])),
            true,
            true,
        ),
    ];
    for (what, pod, cached, look) in cases {
        assert_eq!(
            worth_a_look(&pod, cached, now(), &settings()),
            look,
            "{what}"
        );
    }
}

#[test]
fn the_oldest_deletion_is_the_age_of_the_longest_stopping_pod() {
    // A pod whose delete was asked at `asked` with a grace period of `grace` seconds, as
    // the watch reads it (`deletionTimestamp` is the request plus the grace period).
    let stopping = |asked: &str, grace: i64| {
        let asked: Timestamp = asked.parse().expect("time literal");
        let deletion = asked + SignedDuration::from_secs(grace);
        let meta = ObjectMeta {
            deletion_timestamp: Some(Time(deletion)),
            deletion_grace_period_seconds: Some(grace),
            finalizers: Some(vec![POD_FINALIZER.into()]),
            ..ObjectMeta::default()
        };
        StoppingPod::of(&meta).expect("a stopping pod")
    };
    let cases = [
        ("none", vec![], 0),
        ("one", vec![stopping("2026-12-01T11:59:00Z", 0)], 60),
        (
            "the oldest of several",
            vec![
                stopping("2026-12-01T11:59:00Z", 30),
                stopping("2026-12-01T11:00:00Z", 30),
                stopping("2026-12-01T11:30:00Z", 30),
            ],
            3600,
        ),
        (
            "a year's grace period: the age still counts from the request",
            vec![stopping("2026-12-01T11:00:00Z", 31_536_000)],
            3600,
        ),
        (
            "a request timed after now (clock skew) counts as none",
            vec![stopping("2026-12-01T12:05:00Z", 0)],
            0,
        ),
    ];
    for (what, pods, seconds) in cases {
        assert_eq!(oldest_deleting(&pods, now()).as_secs(), seconds, "{what}");
    }
}
