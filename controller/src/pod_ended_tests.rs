//! When a released pod may be deleted without grace: only once nothing of it runs.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::nothing_left_to_stop;

const RUNNING: &str = "running";
const TERMINATED: &str = "terminated";
const WAITING: &str = "waiting";
/// The test pods' deletion timestamp: the end of their grace period.
const GRACE_ENDS: &str = "2026-11-27T00:01:00Z";
const AFTER_GRACE: &str = "2026-11-27T00:01:03Z";
const WITHIN_GRACE: &str = "2026-11-27T00:00:59Z";

fn state(s: &str) -> Value {
    match s {
        RUNNING => json!({"running": {"startedAt": "2026-11-27T00:00:00Z"}}),
        TERMINATED => json!({"terminated": {"exitCode": 0}}),
        // What older kubelets report for a container they removed, and for one not started.
        _ => json!({"waiting": {"reason": "ContainerCreating"}}),
    }
}

/// A pod with two containers (`ide`, `agent`) reported in `states` (fewer: not reported),
/// init containers in `init`, deleting or not, with `finalizers`.
fn pod(states: &[&str], init: &[&str], deleting: bool, finalizers: &[&str]) -> Pod {
    let named = |prefix: &str, states: &[&str]| -> Vec<Value> {
        states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({"name": format!("{prefix}{i}"), "image": "i", "ready": false,
                                 "restartCount": 0, "imageID": "", "state": state(s)})
            })
            .collect()
    };
    let mut meta = json!({"name": "ws-alice", "uid": "u-1", "finalizers": finalizers});
    if deleting {
        meta["deletionTimestamp"] = json!(GRACE_ENDS);
    }
    serde_json::from_value(json!({
        "metadata": meta,
        "spec": {"containers": [{"name": "ide", "image": "i"}, {"name": "agent", "image": "i"}]},
        "status": {"containerStatuses": named("c", states), "initContainerStatuses": named("init", init)}
    }))
    .expect("pod literal")
}

#[test]
fn only_a_terminating_unheld_pod_whose_containers_all_stopped() {
    let cases = [
        (
            "all stopped, within the grace period",
            pod(&[TERMINATED, TERMINATED], &[], true, &[]),
            WITHIN_GRACE,
            true,
        ),
        (
            "removed by an older kubelet (reported waiting), grace period over",
            pod(&[WAITING, TERMINATED], &[], true, &[]),
            AFTER_GRACE,
            true,
        ),
        (
            "waiting within the grace period: the kubelet may not have stopped it yet",
            pod(&[WAITING, TERMINATED], &[], true, &[]),
            WITHIN_GRACE,
            false,
        ),
        (
            "all stopped",
            pod(&[TERMINATED, TERMINATED], &[TERMINATED], true, &[]),
            AFTER_GRACE,
            true,
        ),
        (
            "init never ran",
            pod(&[TERMINATED, TERMINATED], &[WAITING], true, &[]),
            AFTER_GRACE,
            true,
        ),
        (
            "one still running",
            pod(&[TERMINATED, RUNNING], &[], true, &[]),
            AFTER_GRACE,
            false,
        ),
        (
            "one not reported yet",
            pod(&[TERMINATED], &[], true, &[]),
            AFTER_GRACE,
            false,
        ),
        (
            "an init container running",
            pod(&[TERMINATED, TERMINATED], &[RUNNING], true, &[]),
            AFTER_GRACE,
            false,
        ),
        (
            "not being deleted",
            pod(&[TERMINATED, TERMINATED], &[], false, &[]),
            AFTER_GRACE,
            false,
        ),
        (
            "someone else's finalizer",
            pod(&[TERMINATED, TERMINATED], &[], true, &["example.com/keep"]),
            AFTER_GRACE,
            false,
        ),
        (
            "no status at all",
            {
                let mut p = pod(&[], &[], true, &[]);
                p.status = None;
                p
            },
            AFTER_GRACE,
            false,
        ),
    ];
    for (what, pod, now, want) in cases {
        let now: jiff::Timestamp = now.parse().expect("time");
        assert_eq!(nothing_left_to_stop(&pod, now), want, "{what}");
    }
}
