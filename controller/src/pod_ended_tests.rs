//! When a released pod may be deleted without grace: only once nothing of it runs.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::nothing_left_to_stop;

const RUNNING: &str = "running";
const TERMINATED: &str = "terminated";

fn state(s: &str) -> Value {
    match s {
        RUNNING => json!({"running": {"startedAt": "2026-11-27T00:00:00Z"}}),
        TERMINATED => json!({"terminated": {"exitCode": 0}}),
        _ => json!({"waiting": {"reason": "PodInitializing"}}),
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
        meta["deletionTimestamp"] = json!("2026-11-27T00:01:00Z");
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
            "all stopped",
            pod(&[TERMINATED, TERMINATED], &[TERMINATED], true, &[]),
            true,
        ),
        (
            "init never ran",
            pod(&[TERMINATED, TERMINATED], &["waiting"], true, &[]),
            true,
        ),
        (
            "one still running",
            pod(&[TERMINATED, RUNNING], &[], true, &[]),
            false,
        ),
        (
            "one not reported yet",
            pod(&[TERMINATED], &[], true, &[]),
            false,
        ),
        (
            "an init container running",
            pod(&[TERMINATED, TERMINATED], &[RUNNING], true, &[]),
            false,
        ),
        (
            "not being deleted",
            pod(&[TERMINATED, TERMINATED], &[], false, &[]),
            false,
        ),
        (
            "someone else's finalizer",
            pod(&[TERMINATED, TERMINATED], &[], true, &["example.com/keep"]),
            false,
        ),
        (
            "no status at all",
            {
                let mut p = pod(&[], &[], true, &[]);
                p.status = None;
                p
            },
            false,
        ),
    ];
    for (what, pod, want) in cases {
        assert_eq!(nothing_left_to_stop(&pod), want, "{what}");
    }
}
