//! When a stopped pod that needs its disposal confirmed may go: one row per situation.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::Workspace;
use lifeguard_api::names::{DISPOSAL_CONFIRMATION_ANNOTATION, DISPOSAL_RESULT_ANNOTATION};
use lifeguard_api::workspace::condition::DISPOSAL_CONFIRMED;
use serde_json::{Value, json};

use lifeguard_api::disposal::DisposalResult;

use super::*;
use crate::workspace::plan::{Action, Settings};

fn at(text: &str) -> Timestamp {
    text.parse().expect("timestamp literal")
}

fn ws(confirm: Option<bool>, conditions: Value) -> Workspace {
    serde_json::from_value(json!({
        "metadata": {"name": "alice", "namespace": "dev", "uid": "ws-uid", "generation": 1},
        "spec": {"podTemplate": {}, "confirmDisposal": confirm},
        "status": {"phase": "Stopping", "conditions": conditions},
    }))
    .expect("workspace literal")
}

fn pod(required: bool, result: Option<&str>) -> Pod {
    let mut annotations = serde_json::Map::new();
    if required {
        annotations.insert(DISPOSAL_CONFIRMATION_ANNOTATION.into(), json!("required"));
    }
    if let Some(r) = result {
        annotations.insert(DISPOSAL_RESULT_ANNOTATION.into(), json!(r));
    }
    serde_json::from_value(json!({"metadata": {
        "name": "ws-alice", "namespace": "dev", "annotations": annotations,
        "deletionTimestamp": "2026-12-01T22:00:00Z",
    }}))
    .expect("pod literal")
}

fn settings() -> Settings {
    Settings {
        disposal_confirm_timeout: SignedDuration::from_mins(10),
        ..Settings::default()
    }
}

/// (what, workspace, pod, the receipt's answer, now, want).
type Case = (
    &'static str,
    Workspace,
    Pod,
    Option<DisposalResult>,
    Timestamp,
    &'static str,
);

#[test]
fn release_waits_for_the_agent_or_the_timeout() {
    let recorded = json!([{"type": DISPOSAL_CONFIRMED, "status": "False", "reason": "TimedOut",
                           "message": "", "lastTransitionTime": "2026-12-01T22:10:00Z"}]);
    let during = at("2026-12-01T22:05:00Z");
    let after = at("2026-12-01T22:10:00Z");
    let saved = || Some(DisposalResult::Saved);
    let failed = || Some(DisposalResult::Failed("quota exceeded".into()));
    // (what, workspace, pod, receipt, now, want: "release", "wait", or the recorded
    // (status, reason))
    let cases: Vec<Case> = vec![
        (
            "no handshake",
            ws(None, json!([])),
            pod(false, None),
            None,
            during,
            "release",
        ),
        (
            "waiting for the agent",
            ws(None, json!([])),
            pod(true, None),
            None,
            during,
            "wait",
        ),
        (
            "the agent saved it",
            ws(None, json!([])),
            pod(true, Some("saved")),
            None,
            during,
            "True/Saved",
        ),
        (
            "the agent failed",
            ws(None, json!([])),
            pod(true, Some("failed: disk full")),
            None,
            during,
            "False/AgentFailed",
        ),
        (
            "saved by receipt",
            ws(None, json!([])),
            pod(true, None),
            saved(),
            during,
            "True/Saved",
        ),
        (
            "failed by receipt",
            ws(None, json!([])),
            pod(true, None),
            failed(),
            during,
            "False/AgentFailed",
        ),
        (
            "a receipt's failure outweighs the pod's saved",
            ws(None, json!([])),
            pod(true, Some("saved")),
            failed(),
            during,
            "False/AgentFailed",
        ),
        (
            "no answer in time",
            ws(None, json!([])),
            pod(true, None),
            None,
            after,
            "False/TimedOut",
        ),
        (
            "outcome on record: release",
            ws(None, recorded),
            pod(true, None),
            None,
            after,
            "release",
        ),
    ];
    for (what, workspace, p, receipt, now, want) in cases {
        let got = match release(&workspace, &p, receipt, now, &settings()) {
            Action::ReleasePod => "release".to_string(),
            Action::WaitUntil(t) => {
                assert_eq!(
                    t,
                    at("2026-12-01T22:10:00Z"),
                    "{what}: waits until the timeout"
                );
                "wait".to_string()
            }
            Action::RecordDisposal(status) => {
                let c = status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == DISPOSAL_CONFIRMED)
                    .unwrap_or_else(|| panic!("{what}: no condition"));
                if c.status == "False" {
                    assert!(c.message.contains("may be lost"), "{what}: {}", c.message);
                }
                if what.contains("receipt") && c.status == "False" {
                    assert!(
                        c.message.contains("quota exceeded"),
                        "{what}: {}",
                        c.message
                    );
                }
                format!("{}/{}", c.status, c.reason)
            }
            other => panic!("{what}: {other:?}"),
        };
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn who_confirms_disposal() {
    let default_off = Settings::default();
    let default_on = Settings {
        confirm_disposal: true,
        ..Settings::default()
    };
    let cases = [
        (None, &default_off, false),
        (None, &default_on, true),
        (Some(true), &default_off, true),
        (Some(false), &default_on, false),
    ];
    for (spec, settings, want) in cases {
        assert_eq!(
            confirmation_applies(&ws(spec, json!([])), settings),
            want,
            "spec {spec:?}, default {}",
            settings.confirm_disposal
        );
    }
}

#[test]
fn an_unconfirmed_outcome_is_counted_by_its_cause() {
    let cases = [
        (REASON_TIMED_OUT, "timed_out"),
        (REASON_AGENT_FAILED, "agent_failed"),
        // Any other reason the condition may carry is the agent's.
        ("SomethingElse", "agent_failed"),
    ];
    for (reason, label) in cases {
        assert_eq!(unconfirmed_label(reason), label, "{reason}");
    }
}

/// A pod deleted at 22:00 (its deletion time, grace included) whose containers the kubelet
/// reported with these states.
fn stopped_pod(states: Value) -> Pod {
    let statuses: Vec<Value> = states
        .as_array()
        .expect("states literal")
        .iter()
        .enumerate()
        .map(|(i, state)| {
            json!({"name": format!("c{i}"), "image": "ws", "imageID": "",
                                  "ready": false, "restartCount": 0, "state": state})
        })
        .collect();
    let mut p = pod(true, None);
    p.status = Some(
        serde_json::from_value(json!({"phase": "Running", "containerStatuses": statuses}))
            .expect("status literal"),
    );
    p
}

fn finished(at: &str) -> Value {
    json!({"terminated": {"exitCode": 0, "finishedAt": at}})
}

#[test]
fn the_agents_wait_starts_when_the_containers_stopped() {
    // Deleted at 22:00; disposal timeout 2m (the default), the agent's wait 10m: a pod
    // still running at 22:02 is treated as stopped then, and the latest a reported stop
    // starts the wait is 22:12, when a pod never reported stopped is released.
    let cases = [
        ("no statuses reported", stopped_pod(json!([])), "22:00:00"),
        (
            "stopped within the grace period",
            stopped_pod(json!([finished("2026-12-01T21:59:30Z")])),
            "22:00:00",
        ),
        (
            "the kubelet stopped them late",
            stopped_pod(json!([finished("2026-12-01T22:00:40Z")])),
            "22:00:40",
        ),
        (
            "the last container to stop counts",
            stopped_pod(json!([
                finished("2026-12-01T22:00:10Z"),
                finished("2026-12-01T22:01:05Z")
            ])),
            "22:01:05",
        ),
        (
            "a container reported waiting has no stop time",
            stopped_pod(json!([{"waiting": {"reason": "ContainerCreating"}},
                               finished("2026-12-01T22:00:20Z")])),
            "22:00:20",
        ),
        (
            "a kubelet lagging past the disposal timeout: the wait still starts at the stop",
            stopped_pod(json!([finished("2026-12-01T22:05:00Z")])),
            "22:05:00",
        ),
        (
            "a container still running past the disposal timeout: treated as stopped then",
            stopped_pod(json!([{"running": {"startedAt": "2026-12-01T21:00:00Z"}},
                               finished("2026-12-01T22:00:20Z")])),
            "22:02:00",
        ),
        (
            "a stop past the longest wait (a node's clock running ahead) is capped",
            stopped_pod(json!([finished("2026-12-02T09:00:00Z")])),
            "22:12:00",
        ),
    ];
    for (what, p, want) in cases {
        assert_eq!(
            agent_asked_at(&p, &settings()),
            Some(at(&format!("2026-12-01T{want}Z"))),
            "{what}"
        );
    }
    let mut not_deleting = stopped_pod(json!([finished("2026-12-01T22:00:40Z")]));
    not_deleting.metadata.deletion_timestamp = None;
    assert_eq!(agent_asked_at(&not_deleting, &settings()), None);
}

#[test]
fn a_kubelet_behind_its_pods_does_not_shorten_the_agents_wait() {
    // Deleted at 22:00; disposal timeout 2m, the agent's wait 10m. The kubelet, behind its
    // pods, reports the stop at 22:01 (within the disposal timeout) or only at 22:05.
    let ws = ws(None, json!([]));
    let behind = stopped_pod(json!([finished("2026-12-01T22:01:00Z")]));
    let running = stopped_pod(json!([{"running": {"startedAt": "2026-12-01T21:00:00Z"}}]));
    let late = stopped_pod(json!([finished("2026-12-01T22:05:00Z")]));
    let cases = [
        (
            "stopped at 22:01, past the deletion's deadline",
            &behind,
            "22:10:30",
            None,
            "wait 22:11:00",
        ),
        (
            "stopped at 22:01, at the stop's deadline",
            &behind,
            "22:11:00",
            None,
            "False/TimedOut",
        ),
        (
            "still running, past the disposal timeout",
            &running,
            "22:03:00",
            None,
            "wait 22:12:00",
        ),
        (
            "never reported stopped",
            &running,
            "22:12:00",
            None,
            "False/TimedOut",
        ),
        (
            "reported stopped at 22:05",
            &late,
            "22:12:30",
            None,
            "wait 22:15:00",
        ),
        (
            "no answer by the stop's deadline",
            &late,
            "22:15:00",
            None,
            "False/TimedOut",
        ),
        (
            "the agent's receipt after the deletion's deadline",
            &late,
            "22:14:00",
            Some(DisposalResult::Saved),
            "True/Saved",
        ),
    ];
    for (what, pod, now, receipt, want) in cases {
        let now = at(&format!("2026-12-01T{now}Z"));
        let got = match release(&ws, pod, receipt, now, &settings()) {
            Action::WaitUntil(t) => format!("wait {}", t.strftime("%H:%M:%S")),
            Action::RecordDisposal(status) => status
                .conditions
                .iter()
                .find(|c| c.type_ == DISPOSAL_CONFIRMED)
                .map(|c| format!("{}/{}", c.status, c.reason))
                .unwrap_or_default(),
            other => panic!("{what}: {other:?}"),
        };
        assert_eq!(got, want, "{what}");
    }
}
