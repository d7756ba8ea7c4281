//! What the Ready condition says while the pod is not running yet, or is being stopped.

use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase};
use serde_json::{Value, json};

use super::from_pod;

fn pending_pod(conditions: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "ws-alice"},
        "status": {"phase": "Pending", "conditions": conditions}
    }))
    .expect("pod literal")
}

#[test]
fn a_pod_no_node_can_take_says_why() {
    let ws: Workspace = serde_json::from_value(json!({
        "metadata": {"name": "alice", "namespace": "dev", "generation": 1},
        "spec": {"podTemplate": {}}
    }))
    .expect("workspace literal");
    let now: jiff::Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
    let why = "0/2 nodes are available: 1 node(s) didn't match node selector, 1 Insufficient cpu.";
    // (what, pod conditions, reason, message contains)
    let cases = [
        (
            "unschedulable",
            json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": why}]),
            "Unschedulable",
            why,
        ),
        ("not scheduled yet", json!([]), "PodStarting", "starting"),
        (
            "scheduled",
            json!([{"type": "PodScheduled", "status": "True"}]),
            "PodStarting",
            "starting",
        ),
    ];
    for (what, conditions, reason, message) in cases {
        let status = from_pod(&ws, &pending_pod(conditions), WorkspacePhase::Creating, now);
        let ready = status
            .conditions
            .iter()
            .find(|c| c.type_ == condition::READY)
            .expect("Ready condition");
        assert_eq!(ready.status, "False", "{what}");
        assert_eq!(ready.reason, reason, "{what}");
        assert!(ready.message.contains(message), "{what}: {}", ready.message);
    }
}

#[test]
fn a_stop_someone_else_started_says_who_in_the_clusters_words() {
    let ws: Workspace = serde_json::from_value(json!({
        "metadata": {"name": "alice", "namespace": "dev", "generation": 1},
        "spec": {"podTemplate": {}}
    }))
    .expect("workspace literal");
    let now: jiff::Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
    let evicted = json!([{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                          "message": "Eviction API: evicting"}]);
    let tainted = json!([{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                          "message": "Taint manager: deleting due to NoExecute taint"}]);
    // (what, pod conditions, Ready reason, message contains)
    let cases = [
        (
            "evicted",
            evicted,
            "EvictionByEvictionAPI",
            "being stopped (EvictionByEvictionAPI): Eviction API: evicting",
        ),
        (
            "taint manager",
            tainted,
            "DeletionByTaintManager",
            "NoExecute taint",
        ),
        (
            "a condition no longer true",
            json!([{"type": "DisruptionTarget", "status": "False", "reason": "EvictionByEvictionAPI"}]),
            "PodEnded",
            "has ended",
        ),
        ("none", json!([]), "PodEnded", "has ended"),
    ];
    for (what, conditions, reason, message) in cases {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "ws-alice", "deletionTimestamp": "2026-12-01T22:30:30Z"},
            "status": {"phase": "Running", "conditions": conditions}
        }))
        .expect("pod literal");
        let status = from_pod(&ws, &pod, WorkspacePhase::Stopping, now);
        let ready = status
            .conditions
            .iter()
            .find(|c| c.type_ == condition::READY)
            .expect("Ready condition");
        assert_eq!(ready.reason, reason, "{what}");
        assert!(ready.message.contains(message), "{what}: {}", ready.message);
    }
}
