//! Where the steering affinity goes, for each shape of a pod's existing affinity, and
//! that the decision adds it only for active node-scoped windows covering the pod.

use std::collections::BTreeMap;

use jiff::Timestamp;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::names::{POD_FINALIZER, WORKSPACE_LABEL};
use serde_json::{Value, json};

use super::*;
use crate::decision::Decision;
use crate::decision::{Inputs, NamespaceLabels, mutate, validate};
use crate::review::{self, AdmissionRequest, Operation};

fn window(name: &str, extra: Value) -> CompiledWindow {
    let mut spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    let w: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .expect("window literal");
    CompiledWindow::compile(&w).expect("valid window")
}

fn node_2() -> CompiledWindow {
    window(
        "upgrade",
        json!({"nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "node-2"}}}),
    )
}

fn avoid_node_2() -> Value {
    json!({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node-2"]}]})
}

/// The JSON Patch `steer` gives, as JSON.
fn patch(pod: Value, windows: &[&CompiledWindow]) -> Value {
    json!(steer(
        pod.get("spec").and_then(|s| s.get("affinity")),
        windows
    ))
}

#[test]
fn the_affinity_goes_where_the_pod_has_none_yet_and_keeps_what_it_has() {
    let w = node_2();
    let gpu = json!({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]});
    let cases = [
        (
            "no affinity",
            json!({"spec": {}}),
            json!([{"op": "add", "path": "/spec/affinity", "value":
                {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [avoid_node_2()]}}}}]),
        ),
        (
            "pod affinity only",
            json!({"spec": {"affinity": {"podAntiAffinity": {}}}}),
            json!([{"op": "add", "path": "/spec/affinity/nodeAffinity", "value":
                {REQUIRED: {"nodeSelectorTerms": [avoid_node_2()]}}}]),
        ),
        (
            "preferred node affinity only (the controller's node avoidance)",
            json!({"spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}}}),
            json!([{"op": "add", "path": format!("/spec/affinity/nodeAffinity/{REQUIRED}"), "value":
                {"nodeSelectorTerms": [avoid_node_2()]}}]),
        ),
        (
            "required terms already: each is AND-ed with the avoidance",
            json!({"spec": {"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [gpu]}}}}}),
            json!([{"op": "add", "path": format!("/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms"), "value":
            [{"matchExpressions": [
                {"key": "gpu", "operator": "Exists"},
                {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node-2"]}
            ]}]}]),
        ),
    ];
    for (what, pod, want) in cases {
        assert_eq!(patch(pod, &[&w]), want, "{what}");
    }
    assert_eq!(
        patch(json!({"spec": {}}), &[]),
        json!([]),
        "no window, no patch"
    );
}

fn pod_request(namespace_labels: Value) -> (AdmissionRequest, NamespaceLabels) {
    let request = AdmissionRequest {
        uid: "u".into(),
        group: String::new(),
        kind: "Pod".into(),
        operation: Operation::Create,
        namespace: Some("dev".into()),
        name: Some("ws-alice".into()),
        object: Some(review::decode_object(
            "",
            "Pod",
            &json!({"metadata": {"labels": {WORKSPACE_LABEL: "alice"}}}),
        )),
        username: "controller".into(),
        spec_unchanged: false,
        old_postpone_request: None,
        dry_run: false,
    };
    let labels: BTreeMap<String, String> =
        serde_json::from_value(namespace_labels).expect("labels");
    (request, NamespaceLabels::Known(labels))
}

#[test]
fn a_node_scoped_window_steers_covered_pods_and_denies_nothing() {
    let at = |t: &str| t.parse::<Timestamp>().expect("time");
    let dev_only = window(
        "dev-only",
        json!({"nodeSelector": {"matchLabels": {"pool": "a"}},
               "namespaceSelector": {"matchLabels": {"env": "dev"}}}),
    );
    let windows = [node_2(), dev_only];
    let finalizer = json!({"op": "add", "path": "/metadata/finalizers", "value": [POD_FINALIZER]});
    // (what, namespace labels, now, how many requirements the one steering term has, or none)
    let cases = [
        (
            "during both windows, covered by both",
            json!({"env": "dev"}),
            "2026-12-01T22:30:00Z",
            Some(2),
        ),
        (
            "during, covered by the cluster-wide one only",
            json!({"env": "prod"}),
            "2026-12-01T22:30:00Z",
            Some(1),
        ),
        (
            "before the windows open",
            json!({"env": "dev"}),
            "2026-12-01T21:30:00Z",
            None,
        ),
    ];
    for (what, ns, now, terms) in cases {
        let (request, namespace) = pod_request(ns);
        let ctx = Inputs {
            windows: &windows,
            namespace: &namespace,
            now: at(now),
            recreation_users: &[],
        };
        assert_eq!(
            validate(&request, &ctx),
            Decision::Allow,
            "{what}: never denied"
        );
        let Decision::Patch(patch) = mutate(&request, &ctx) else {
            panic!("{what}: the finalizer is always stamped");
        };
        let ops = json!(patch);
        assert_eq!(ops[0], finalizer, "{what}");
        let steered =
            ops[1]["value"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0]["matchExpressions"]
                .as_array()
                .map(Vec::len);
        assert_eq!(steered, terms, "{what}: {ops}");
    }
}
