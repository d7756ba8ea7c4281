//! The start deadline and the `Starting` condition over the ways a start hangs.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::WorkspacePhase;
use lifeguard_api::rejection::RejectionClass;
use lifeguard_api::workspace::condition;
use serde_json::{Value, json};

use super::*;
use crate::status::from_pod;
use crate::workspace::plan::plan_tests::{pod, ws};
use crate::workspace::plan::{Action, Observed, plan_observed};

const CREATED: &str = "2026-12-01T12:00:00Z";

fn at(t: &str) -> Timestamp {
    t.parse().expect("time")
}

fn starting_pod(status: Value) -> Pod {
    pod(status, json!({"creationTimestamp": CREATED}))
}

fn waiting(reason: &str, message: &str) -> Value {
    json!({"phase": "Pending", "containerStatuses": [{"name": "ide", "image": "registry.example/ide:1",
        "imageID": "", "ready": false, "restartCount": 0,
        "state": {"waiting": {"reason": reason, "message": message}}}]})
}

fn ready() -> Value {
    json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "ide", "image": "i", "imageID": "", "ready": true,
        "restartCount": 0, "state": {"running": {}}}]})
}

fn condition_of<'a>(status: &'a WorkspaceStatus, type_: &str) -> (&'a str, &'a str, &'a str) {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map_or(("", "", ""), |c| {
            (c.status.as_str(), c.reason.as_str(), c.message.as_str())
        })
}

fn step_at(
    spec_timeout: Option<&str>,
    status: Value,
    pod: &Pod,
    mount: Option<(&str, &str)>,
    now: &str,
    recreated: u32,
) -> StartStep {
    let mut w = ws(status, json!({}));
    w.spec.start_timeout = spec_timeout.map(str::to_string);
    if let Some(s) = w.status.as_mut() {
        s.pod_recreated = recreated;
    }
    let settings = Settings::default();
    let phase = if pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") {
        WorkspacePhase::Running
    } else {
        WorkspacePhase::Creating
    };
    let next = from_pod(&w, pod, phase, at(now));
    step(&w, pod, next, mount, at(now), &settings)
}

/// (case, spec.startTimeout, pod status, mount Event, now, Starting reason, message
/// fragment, recheck)
type ConditionCase = (
    &'static str,
    Option<&'static str>,
    Value,
    Option<(&'static str, &'static str)>,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

/// (case, pod status, mount Event, now, re-creations so far, phase, re-create, failure
/// reason, message fragment)
type GiveUpCase = (
    &'static str,
    Value,
    Option<(&'static str, &'static str)>,
    &'static str,
    u32,
    WorkspacePhase,
    bool,
    &'static str,
    &'static str,
);

#[test]
fn the_starting_condition_names_the_blocker_and_the_deadline() {
    let creating = json!({"phase": "Creating", "podStarts": 1});
    // (case, timeout, pod status, mount event, now, starting reason, fragment, recheck)
    let cases: Vec<ConditionCase> = vec![
        (
            "nothing holds it",
            None,
            json!({"phase": "Pending"}),
            None,
            "2026-12-01T12:00:05Z",
            "PodStarting",
            "must be ready by 2026-12-01T12:10:00Z",
            Some("2026-12-01T12:10:00Z"),
        ),
        (
            "its own timeout",
            Some("30m"),
            json!({"phase": "Pending"}),
            None,
            "2026-12-01T12:00:05Z",
            "PodStarting",
            "by 2026-12-01T12:30:00Z",
            Some("2026-12-01T12:30:00Z"),
        ),
        (
            "unschedulable",
            None,
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
            "status": "False", "reason": "Unschedulable", "message": "0/2 nodes are available: 2 Insufficient cpu."}]}),
            None,
            "2026-12-01T12:00:05Z",
            "Unschedulable",
            "2 Insufficient cpu.; waiting for it to clear: unless it does, the workspace fails at 2026-12-01T12:10:00Z",
            Some("2026-12-01T12:10:00Z"),
        ),
        (
            "missing secret",
            None,
            waiting("CreateContainerConfigError", "secret \"token\" not found"),
            None,
            "2026-12-01T12:01:00Z",
            "ContainerConfig",
            "secret \"token\" not found; waiting",
            Some("2026-12-01T12:10:00Z"),
        ),
        (
            "mount fails on this node",
            None,
            waiting("ContainerCreating", ""),
            Some(("FailedMount", "MountVolume.SetUp failed: exit status 32")),
            "2026-12-01T12:01:00Z",
            "VolumeMount",
            "re-created on another node at 2026-12-01T12:10:00Z",
            // No earlier look: a new mount failure Event triggers one (`mount_events`).
            Some("2026-12-01T12:10:00Z"),
        ),
        (
            "image pulling",
            None,
            waiting("ImagePullBackOff", "Back-off pulling image"),
            None,
            "2026-12-01T12:02:00Z",
            "ImagePull",
            "Back-off pulling image",
            Some("2026-12-01T12:10:00Z"),
        ),
        (
            "ready: started",
            None,
            ready(),
            None,
            "2026-12-01T12:02:00Z",
            "Started",
            "ready",
            None,
        ),
    ];
    for (case, timeout, pod_status, mount, now, reason, fragment, recheck) in cases {
        let p = starting_pod(pod_status);
        match step_at(timeout, creating.clone(), &p, mount, now, 0) {
            StartStep::Going { status, recheck: r } => {
                let (_, got_reason, message) = condition_of(&status, condition::STARTING);
                assert_eq!(got_reason, reason, "{case}");
                assert!(
                    message.contains(fragment),
                    "{case}: {message:?} lacks {fragment:?}"
                );
                assert_eq!(
                    r.map(|t| t.to_string()),
                    recheck.map(str::to_string),
                    "{case}"
                );
                if reason != "Started" && reason != "PodStarting" {
                    assert_eq!(
                        condition_of(&status, condition::READY).1,
                        reason,
                        "{case}: Ready says why too"
                    );
                }
            }
            other => panic!("{case}: {other:?}"),
        }
    }
}

#[test]
fn the_deadline_fails_or_recreates_and_permanent_blockers_fail_at_once() {
    let creating = json!({"phase": "Creating", "podStarts": 1});
    let unschedulable = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
        "status": "False", "reason": "Unschedulable", "message": "0/2 nodes are available"}]});
    let mount = Some(("FailedMount", "MountVolume.SetUp failed: exit status 32"));
    // (case, pod status, mount event, now, re-creations so far, phase, recreate, failure reason, fragment)
    let cases: Vec<GiveUpCase> = vec![
        (
            "never-pull image fails at once",
            waiting(
                "ErrImageNeverPull",
                "image \"x\" is not present with pull policy of Never",
            ),
            None,
            "2026-12-01T12:00:03Z",
            0,
            WorkspacePhase::Failed,
            false,
            "ErrImageNeverPull",
            "cannot start (ErrImageNeverPull, permanent): container ide: image \"registry.example/ide:1\": image \"x\" is not present",
        ),
        (
            "invalid image name fails at once",
            waiting("InvalidImageName", "couldn't parse"),
            None,
            "2026-12-01T12:00:03Z",
            0,
            WorkspacePhase::Failed,
            false,
            "InvalidImageName",
            "couldn't parse",
        ),
        (
            "unschedulable at the deadline fails",
            unschedulable,
            None,
            "2026-12-01T12:10:00Z",
            0,
            WorkspacePhase::Failed,
            false,
            "StartTimeout",
            "not ready within 10m (the controller's --start-timeout) (Unschedulable, wait: 0/2 nodes are available)",
        ),
        (
            "node-side mount at the deadline: re-create",
            waiting("ContainerCreating", ""),
            mount,
            "2026-12-01T12:10:00Z",
            0,
            WorkspacePhase::Pending,
            true,
            "StartTimeout",
            "VolumeMount, re-create elsewhere",
        ),
        (
            "node-side mount, retries used up: fail",
            waiting("ContainerCreating", ""),
            mount,
            "2026-12-01T12:10:00Z",
            3,
            WorkspacePhase::Failed,
            false,
            "StartTimeout",
            "VolumeMount",
        ),
        (
            "never ready, no blocker seen",
            json!({"phase": "Running", "containerStatuses": [{"name": "ide", "image": "i",
            "imageID": "", "ready": false, "restartCount": 0, "state": {"running": {}}}]}),
            None,
            "2026-12-01T12:11:00Z",
            0,
            WorkspacePhase::Failed,
            false,
            "StartTimeout",
            "(PodStarting, wait: the pod is not ready)",
        ),
    ];
    for (case, pod_status, mount, now, recreated, phase, recreate, reason, fragment) in cases {
        let p = starting_pod(pod_status);
        match step_at(None, creating.clone(), &p, mount, now, recreated) {
            StartStep::GiveUp {
                status,
                recreate: r,
                ..
            } => {
                assert_eq!((status.phase, r), (Some(phase), recreate), "{case}");
                let rejection = status.last_rejection.as_ref().expect("recorded");
                assert_eq!(rejection.pod_uid.as_deref(), Some("pod-uid-1"), "{case}");
                assert_eq!(rejection.reason, reason, "{case}");
                assert_eq!(
                    rejection.node, "node-1",
                    "{case}: the node a re-creation avoids"
                );
                assert!(
                    rejection.message.contains(fragment),
                    "{case}: {:?} lacks {fragment:?}",
                    rejection.message
                );
                let class = if recreate {
                    RejectionClass::Transient
                } else {
                    RejectionClass::Permanent
                };
                assert_eq!(rejection.class, Some(class), "{case}");
                assert_eq!(
                    condition_of(&status, condition::STARTING).1,
                    REASON_START_FAILED,
                    "{case}"
                );
                let decisive = if recreate {
                    condition::POD_REJECTED
                } else {
                    condition::FAILED
                };
                assert_eq!(condition_of(&status, decisive).0, "True", "{case}");
                assert!(given_up(&status, &p), "{case}: plan then deletes this pod");
            }
            other => panic!("{case}: {other:?}"),
        }
    }
}

#[test]
fn a_pod_that_was_ready_once_has_no_deadline_and_a_new_pod_gets_its_own() {
    // Ready at 12:01 for the pod created at 12:00: started, even if it is not ready now.
    let status =
        json!({"phase": "Running", "podStarts": 1, "podReadyTime": "2026-12-01T12:01:00Z"});
    let p = starting_pod(json!({"phase": "Running"}));
    assert!(matches!(
        step_at(None, status.clone(), &p, None, "2026-12-02T00:00:00Z", 0),
        StartStep::Going { recheck: None, .. }
    ));
    // A replacement created after that readiness starts its own clock.
    let newer = pod(
        json!({"phase": "Pending"}),
        json!({"creationTimestamp": "2026-12-01T13:00:00Z"}),
    );
    match step_at(None, status, &newer, None, "2026-12-01T13:10:00Z", 0) {
        StartStep::GiveUp { .. } => {}
        other => panic!("the replacement's deadline: {other:?}"),
    }
}

#[test]
fn ready_time_is_recorded_once_per_pod() {
    let w = ws(json!({"phase": "Creating", "podStarts": 1}), json!({}));
    let p = starting_pod(ready());
    let first = from_pod(
        &w,
        &p,
        WorkspacePhase::Running,
        at("2026-12-01T12:00:42.5Z"),
    );
    assert_eq!(
        first.pod_ready_time.as_ref().map(|t| t.0),
        Some(at("2026-12-01T12:00:42Z"))
    );
    let mut stored = w.clone();
    stored.status = Some(first.clone());
    let again = from_pod(
        &stored,
        &p,
        WorkspacePhase::Running,
        at("2026-12-01T12:05:00Z"),
    );
    assert_eq!(
        again.pod_ready_time, first.pod_ready_time,
        "not moved by later looks"
    );
}

#[test]
fn plan_deletes_a_given_up_pod_gracefully_then_releases_it() {
    let settings = Settings::default();
    let p = starting_pod(waiting("ErrImageNeverPull", "not present"));
    let w = ws(json!({"phase": "Creating", "podStarts": 1}), json!({}));
    let now = at("2026-12-01T12:00:05Z");
    let failed = match plan_observed(&w, Some(&p), &Observed::default(), now, &settings) {
        Action::RecordStartFailure {
            status,
            blocker,
            class,
        } => {
            assert_eq!((blocker, class), ("ImagePull", "permanent"));
            status
        }
        other => panic!("{other:?}"),
    };
    let stored = ws(serde_json::to_value(&*failed).expect("status"), json!({}));
    match plan_observed(&stored, Some(&p), &Observed::default(), now, &settings) {
        Action::DeletePod {
            grace_seconds: None,
            cause,
        } => {
            assert!(
                cause.starts_with("its start failed: the workspace pod cannot start"),
                "{cause}"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut deleting = p.clone();
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
    assert_eq!(
        plan_observed(
            &stored,
            Some(&deleting),
            &Observed::default(),
            now,
            &settings
        ),
        Action::ReleasePod,
        "no container runs: nothing to wait for"
    );
    // Gone: the failed workspace stays failed.
    assert_eq!(
        plan_observed(&stored, None, &Observed::default(), now, &settings),
        Action::Idle
    );
}

#[test]
fn a_mount_event_reaches_the_plan() {
    let settings = Settings::default();
    let p = starting_pod(waiting("ContainerCreating", ""));
    let w = ws(json!({"phase": "Creating", "podStarts": 1}), json!({}));
    let observed = Observed {
        mount_event: Some(("FailedMount".into(), "secret \"creds\" not found".into())),
        ..Observed::default()
    };
    match plan_observed(
        &w,
        Some(&p),
        &observed,
        at("2026-12-01T12:00:30Z"),
        &settings,
    ) {
        Action::UpdateStatus(status) => {
            let (state, reason, message) = condition_of(&status, condition::STARTING);
            assert_eq!((state, reason), ("True", "VolumeMount"));
            assert!(message.contains("waiting for it to clear"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_pod_given_up_before_it_was_bound_names_no_node() {
    let mut p = starting_pod(
        json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
        "status": "False", "reason": "Unschedulable", "message": "0/2 nodes are available"}]}),
    );
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = None;
    }
    let creating = json!({"phase": "Creating", "podStarts": 1});
    match step_at(None, creating, &p, None, "2026-12-01T12:10:00Z", 0) {
        StartStep::GiveUp { status, .. } => {
            let node = status.last_rejection.map(|r| r.node);
            assert_eq!(
                node.as_deref(),
                Some(NOT_SCHEDULED),
                "never empty: the API stores it as null"
            );
        }
        other => panic!("{other:?}"),
    }
}
