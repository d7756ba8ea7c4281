//! Pod creates the API refuses: recorded with the API's message, announced once per
//! distinct refusal, retried with capped exponential backoff, all from stored state.

use jiff::SignedDuration;
use lifeguard_api::WorkspacePhase;
use serde_json::{Value, json};

use crate::workspace::plan::plan_tests::{kind, now, pod, rejected_condition, ws};
use crate::workspace::plan::{Action, Settings, plan};

fn quota() -> crate::workspace::plan::CreateRefusal {
    crate::workspace::plan::CreateRefusal {
        code: 403,
        reason: "Forbidden".into(),
        message: "pods \"ws-alice\" is forbidden: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0".into(),
    }
}

fn window_denial() -> crate::workspace::plan::CreateRefusal {
    crate::workspace::plan::CreateRefusal {
        code: 403,
        reason: "Forbidden".into(),
        message: "admission webhook \"validate.lifeguard.dev\" denied the request: workspace pods cannot start during maintenance window \"upgrade\" (until 2026-12-01T13:00:00Z)".into(),
    }
}

fn condition_of(status: &lifeguard_api::WorkspaceStatus, type_: &str) -> (String, String, String) {
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("{type_} condition"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[test]
fn a_refused_create_is_recorded_with_the_api_message_and_announced_once() {
    use crate::workspace::plan::record_create_refusal;
    let later = |secs: i64| now() + SignedDuration::from_secs(secs);
    let mut workspace = ws(json!(null), json!({}));
    // (what, refusal, at, expect a new Event, attempts, since, PodCreateFailed reason)
    let steps = [
        ("first quota refusal", quota(), 0, true, 1, 0, "Forbidden"),
        (
            "same refusal on retry",
            quota(),
            5,
            false,
            2,
            0,
            "Forbidden",
        ),
        ("same refusal again", quota(), 15, false, 3, 0, "Forbidden"),
        (
            "a maintenance denial is a new error",
            window_denial(),
            35,
            true,
            4,
            35,
            "MaintenanceDenied",
        ),
        (
            "the same denial every retry: no new Event",
            window_denial(),
            75,
            false,
            5,
            35,
            "MaintenanceDenied",
        ),
    ];
    for (what, refusal, at, announce, attempts, since, reason) in steps {
        let (status, new) = record_create_refusal(&workspace, &refusal, later(at));
        assert_eq!(new, announce, "{what}: Event");
        assert_eq!(status.phase, Some(WorkspacePhase::Pending), "{what}: phase");
        let recorded = status.last_create_error.clone().expect("recorded");
        assert_eq!(
            (recorded.attempts, recorded.since.0, recorded.time.0),
            (attempts, later(since), later(at)),
            "{what}: record"
        );
        assert_eq!(
            condition_of(&status, "PodCreateFailed"),
            ("True".into(), reason.into(), refusal.message.clone()),
            "{what}: condition carries the API's message"
        );
        assert_eq!(condition_of(&status, "Ready").0, "False", "{what}");
        // What the next step sees is only what is stored, as after a controller restart.
        let stored = serde_json::to_value(&status).expect("status serialises");
        workspace.status = Some(serde_json::from_value(stored).expect("status reads back"));
    }
}

#[test]
fn refused_creates_are_retried_with_capped_exponential_backoff() {
    use crate::workspace::plan::create_retry_at;
    let settings = Settings::default();
    let refused = |attempts: u32| lifeguard_api::workspace::PodCreateError {
        code: 403,
        reason: "Forbidden".into(),
        message: "m".into(),
        attempts,
        since: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()),
        time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()),
    };
    for (attempts, wait) in [
        (1, 5),
        (2, 10),
        (3, 20),
        (5, 80),
        (6, 120),
        (7, 120),
        (u32::MAX, 120),
    ] {
        assert_eq!(
            create_retry_at(&refused(attempts), &settings),
            now() + SignedDuration::from_secs(wait),
            "after {attempts} refusals"
        );
    }

    let with_refusal = |extra: Value, seconds_ago: i64| {
        let mut status = json!({"phase": "Pending", "lastCreateError": {"code": 403, "reason": "Forbidden",
            "message": "m", "attempts": 2, "since": "2026-12-01T11:00:00Z",
            "time": (now() - SignedDuration::from_secs(seconds_ago)).to_string()}});
        if let (Some(s), Some(extra)) = (status.as_object_mut(), extra.as_object()) {
            s.extend(extra.clone());
        }
        ws(status, json!({}))
    };
    let rejected = json!({"podStarts": 1, "podDeletionTime": "2026-12-01T11:00:00Z",
                          "conditions": rejected_condition("True")});
    let cases = [
        (
            "first start, backoff not over",
            with_refusal(json!({}), 4),
            "WaitUntil(2026-12-01T12:00:06Z)",
        ),
        (
            "first start, backoff over",
            with_refusal(json!({}), 10),
            "CreatePod { start: 1, recreation: None }",
        ),
        (
            "re-creation, backoff not over",
            with_refusal(rejected.clone(), 4),
            "WaitUntil(2026-12-01T12:00:06Z)",
        ),
        (
            "re-creation, backoff over: no rejection retry used up by the refusals",
            with_refusal(rejected, 10),
            "CreatePod { start: 2, recreation: Some(1) }",
        ),
    ];
    for (what, workspace, expected) in cases {
        assert_eq!(
            kind(&plan(&workspace, None, now(), &settings)),
            expected,
            "{what}"
        );
    }
}

#[test]
fn a_pod_that_exists_clears_the_refusal() {
    let (refused, _) =
        crate::workspace::plan::record_create_refusal(&ws(json!(null), json!({})), &quota(), now());
    let workspace = ws(serde_json::to_value(&refused).expect("status"), json!({}));
    let Action::UpdateStatus(status) = plan(
        &workspace,
        Some(&pod(json!({"phase": "Pending"}), json!({}))),
        now(),
        &Settings::default(),
    ) else {
        panic!("expected UpdateStatus");
    };
    assert_eq!(status.phase, Some(WorkspacePhase::Creating));
    assert_eq!(status.last_create_error, None);
    assert_eq!(condition_of(&status, "PodCreateFailed").0, "False");
}

/// Issue 25: no pod for a Workspace in kube-system, the controller's own namespace or a
/// configured one; first starts and replacements alike; once Failed it stays idle.
#[test]
fn a_refused_namespace_gets_no_pod() {
    use crate::workspace::namespace_policy::NamespacePolicy;
    let settings = Settings {
        namespaces: NamespacePolicy::new("lifeguard-system", ["shared-infra".to_string()]),
        ..Settings::default()
    };
    let in_ns = |namespace: &str, status: Value| ws(status, json!({"namespace": namespace}));
    let replacement_due = json!({"phase": "Creating", "podStarts": 1, "podRecreated": 0,
        "podDeletionTime": "2026-01-01T00:00:00Z", "nextAttemptTime": "2026-01-01T00:00:01Z",
        "conditions": rejected_condition("True")});
    for (what, workspace, refused) in [
        ("kube-system", in_ns("kube-system", json!(null)), true),
        (
            "own namespace",
            in_ns("lifeguard-system", json!(null)),
            true,
        ),
        ("configured", in_ns("shared-infra", json!(null)), true),
        (
            "a replacement in kube-system",
            in_ns("kube-system", replacement_due.clone()),
            true,
        ),
        ("a tenant namespace", in_ns("team", json!(null)), false),
        (
            "a tenant's replacement",
            in_ns("team", replacement_due),
            false,
        ),
    ] {
        match plan(&workspace, None, now(), &settings) {
            Action::Refuse(status) => {
                assert!(refused, "{what}: refused");
                assert_eq!(status.phase, Some(WorkspacePhase::Failed), "{what}");
                let (value, reason, message) = condition_of(&status, "Failed");
                assert_eq!(
                    (value.as_str(), reason.as_str()),
                    ("True", "NamespaceRefused"),
                    "{what}"
                );
                assert!(message.contains("ServiceAccounts"), "{what}: {message}");
                // Stored, it plans nothing more.
                let mut stored = workspace.clone();
                stored.status = Some(*status);
                assert_eq!(
                    plan(&stored, None, now(), &settings),
                    Action::Idle,
                    "{what}"
                );
            }
            Action::CreatePod { .. } => assert!(!refused, "{what}: created a pod"),
            other => panic!("{what}: {}", kind(&other)),
        }
    }
}

/// The pod as its create returns it: not yet scheduled, no status but its phase.
fn just_created(annotations: Value) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "ws-alice", "uid": "pod-uid-2", "resourceVersion": "7",
                     "creationTimestamp": "2026-12-01T12:00:00Z", "annotations": annotations,
                     "finalizers": ["lifeguard.dev/disposal"],
                     "ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                                          "name": "alice", "uid": "ws-uid", "controller": true}]},
        "spec": {"containers": [{"name": "ide", "image": "busybox"}]},
        "status": {"phase": "Pending"}
    }))
    .expect("pod literal")
}

/// The reconcile that creates the pod records `created_status` and plans once more with
/// the created pod: that pass must find nothing to write (only the start's timer to set),
/// or every start would cost one more status write.
#[test]
fn the_status_recorded_at_create_is_what_planning_with_the_created_pod_wants() {
    use crate::workspace::plan::created_status;
    let after_rejection = json!({
        "phase": "Pending", "podName": "ws-alice", "podStarts": 1, "podRecreated": 0,
        "podDeletionTime": "2026-12-01T11:59:00Z", "nextAttemptTime": "2026-12-01T11:59:58.000000Z",
        "conditions": rejected_condition("True"),
    });
    let cases = [
        (
            "first start",
            json!(null),
            just_created(json!({"lifeguard.dev/start": "1"})),
            1,
            None,
        ),
        (
            "re-creation after a rejection",
            after_rejection,
            just_created(json!({"lifeguard.dev/start": "2", "lifeguard.dev/recreation": "1"})),
            2,
            Some(1),
        ),
    ];
    for (what, before, created, start, recreation) in cases {
        let workspace = ws(before, json!({}));
        let status = created_status(
            &workspace,
            &created,
            start,
            recreation,
            now(),
            &Settings::default(),
        );
        assert_eq!(status.phase, Some(WorkspacePhase::Creating), "{what}");
        assert_eq!(
            status.next_attempt_time, None,
            "{what}: no attempt is due any more"
        );
        assert_eq!(status.pod_recreated, recreation.unwrap_or(0), "{what}");
        let stored = ws(
            serde_json::to_value(&status).expect("serializes"),
            json!({}),
        );
        let next = plan(&stored, Some(&created), now(), &Settings::default());
        assert!(
            kind(&next).starts_with("WaitUntil"),
            "{what}: the next pass only waits, got {}",
            kind(&next)
        );
    }
}
