//! The replacement pod's preference against the node that refused its predecessor.

use k8s_openapi::api::core::v1::{Affinity, Pod};
use lifeguard_api::Workspace;
use serde_json::{Value, json};

use super::{HOSTNAME_LABEL, avoid_node, build, node_to_avoid};

fn workspace(spec: Value, last_rejection_node: Option<&str>) -> Workspace {
    let status = match last_rejection_node {
        Some(node) => {
            json!({"lastRejection": {"reason": "NodeAffinity", "message": "m", "node": node,
                             "time": "2026-12-01T11:00:00Z"}})
        }
        None => json!({}),
    };
    serde_json::from_value(json!({
        "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
        "metadata": {"name": "alice", "namespace": "team", "uid": "ws-uid"},
        "spec": {"podTemplate": {"spec": spec}},
        "status": status
    }))
    .expect("workspace literal")
}

fn affinity(pod: &Pod) -> Value {
    let affinity: Option<&Affinity> = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    serde_json::to_value(affinity).expect("affinity serializes")
}

fn ours(node: &str) -> Value {
    json!({"weight": 100, "preference": {"matchExpressions": [
        {"key": HOSTNAME_LABEL, "operator": "NotIn", "values": [node]}]}})
}

#[test]
fn only_replacements_avoid_and_only_when_enabled() {
    let refused = workspace(json!({"containers": []}), Some("node-1"));
    let cases = [
        ("replacement", &refused, Some(1), true, Some("node-1")),
        ("flag off", &refused, Some(1), false, None),
        ("first start", &refused, None, true, None),
        (
            "no rejection recorded",
            &workspace(json!({"containers": []}), None),
            Some(1),
            true,
            None,
        ),
        (
            "rejection without a node",
            &workspace(json!({"containers": []}), Some("")),
            Some(2),
            true,
            None,
        ),
    ];
    for (what, ws, recreation, enabled, expected) in cases {
        assert_eq!(
            node_to_avoid(ws, recreation, enabled).as_deref(),
            expected,
            "{what}"
        );
    }
}

#[test]
fn user_affinity_is_kept_and_ours_appended() {
    let user_required = json!({"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "disk", "operator": "In", "values": ["ssd"]}]}]});
    let user_preferred = json!({"weight": 20, "preference": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}});
    let user_pod_anti = json!({"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOSTNAME_LABEL, "labelSelector": {"matchLabels": {"app": "ide"}}}]});
    let cases = [
        (
            "no affinity",
            json!({}),
            json!({"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [ours("node-1")]}}),
        ),
        (
            "user node affinity",
            json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": user_required,
                "preferredDuringSchedulingIgnoredDuringExecution": [user_preferred]}}),
            json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": user_required,
                "preferredDuringSchedulingIgnoredDuringExecution": [user_preferred, ours("node-1")]}}),
        ),
        (
            "user pod anti-affinity",
            json!({"podAntiAffinity": user_pod_anti}),
            json!({"podAntiAffinity": user_pod_anti, "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [ours("node-1")]}}),
        ),
    ];
    for (what, user, expected) in cases {
        let ws = workspace(json!({"containers": [], "affinity": user}), Some("node-1"));
        let mut pod = build(&ws, 2, Some(1));
        avoid_node(&mut pod, "node-1");
        assert_eq!(affinity(&pod), expected, "{what}");
        // Nothing else of the template changes.
        let mut without = pod.clone();
        let mut original = build(&ws, 2, Some(1));
        if let (Some(a), Some(b)) = (without.spec.as_mut(), original.spec.as_mut()) {
            a.affinity = None;
            b.affinity = None;
        }
        assert_eq!(without, original, "{what}");
    }
}

#[test]
fn a_pinned_node_is_left_alone() {
    let ws = workspace(
        json!({"containers": [], "nodeName": "node-1", "affinity": {"nodeAffinity": {}}}),
        Some("node-1"),
    );
    let mut pod = build(&ws, 2, Some(1));
    let before = pod.clone();
    avoid_node(&mut pod, "node-1");
    assert_eq!(pod, before);
}
