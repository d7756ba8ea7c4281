//! The pod a Workspace runs, built from its template.

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PreferredSchedulingTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_api::names::{
    GENERATION_ANNOTATION, NODE_TAINT_KEY, NODE_UNPROVEN_KEY, POD_FINALIZER, RECREATION_ANNOTATION,
    START_ANNOTATION, WORKSPACE_LABEL, WORKSPACE_LABELS_ANNOTATION, is_lifeguard_key, pod_name,
};

/// The workspace's pod: its template plus our name, label, annotations, finalizer and an
/// owner reference (so the garbage collector also removes it with the Workspace).
///
/// Keys under `lifeguard.dev/` in the template are dropped: on a pod they are controller
/// state the webhook trusts (a template `lifeguard.dev/recreation` would make a first
/// start pass an `allowRecreation` window). Validation refuses them too; this covers
/// Workspaces stored before it did.
pub fn build(ws: &Workspace, start: u32, recreation: Option<u32>) -> Pod {
    let template = &ws.spec.pod_template;
    let meta = template.metadata.clone().unwrap_or_default();
    let mut labels = meta.labels.unwrap_or_default();
    labels.retain(|key, _| !is_lifeguard_key(key));
    labels.insert(WORKSPACE_LABEL.into(), ws.name_any());
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.retain(|key, _| !is_lifeguard_key(key));
    annotations.insert(START_ANNOTATION.into(), start.to_string());
    // The webhook matches workspaceSelectors for this pod against these, the same labels
    // it matched when the Workspace was created. A string map always serialises.
    annotations.insert(
        WORKSPACE_LABELS_ANNOTATION.into(),
        serde_json::to_string(ws.labels()).unwrap_or_else(|_| "{}".into()),
    );
    if let Some(attempt) = recreation {
        annotations.insert(RECREATION_ANNOTATION.into(), attempt.to_string());
    }
    if let Some(generation) = ws.metadata.generation {
        annotations.insert(GENERATION_ANNOTATION.into(), generation.to_string());
    }
    // Only lifeguard's finalizer: another one would hold the released pod Terminating,
    // and with it the node's drain and the workspace's next start (whose pod has the same
    // name). Validation refuses them; this covers Workspaces stored before it did.
    let finalizers = vec![POD_FINALIZER.to_string()];
    Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(&ws.name_any())),
            namespace: ws.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            finalizers: Some(finalizers),
            owner_references: ws.controller_owner_ref(&()).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Which of lifeguard's node taints (`lifeguard.dev/unhealthy`, `lifeguard.dev/unproven`,
/// both `NoSchedule`) `pod`'s tolerations tolerate: such a pod may be scheduled onto a node
/// lifeguard does not trust, which its author should hear about. A toleration of every key
/// (`operator: Exists` without a key) tolerates both.
pub fn tolerated_lifeguard_taints(pod: &Pod) -> Vec<&'static str> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    [NODE_TAINT_KEY, NODE_UNPROVEN_KEY]
        .into_iter()
        .filter(|key| {
            tolerations.iter().any(|t| {
                let effect_matches = t
                    .effect
                    .as_deref()
                    .is_none_or(|e| e.is_empty() || e == "NoSchedule");
                let key_matches = match t.key.as_deref() {
                    None | Some("") => t.operator.as_deref() == Some("Exists"),
                    Some(k) => k == *key,
                };
                effect_matches && key_matches
            })
        })
        .collect()
}

/// The node label the avoidance matches (the well-known label every kubelet sets).
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The node a replacement pod should prefer not to land on: the one whose kubelet refused
/// its predecessor. `None` for a first start or when `--avoid-refusing-node=false`.
pub fn node_to_avoid(ws: &Workspace, recreation: Option<u32>, enabled: bool) -> Option<String> {
    recreation.filter(|_| enabled)?;
    let refused = ws.status.as_ref()?.last_rejection.as_ref()?;
    Some(refused.node.clone())
        .filter(|n| !n.is_empty() && n != crate::workspace::start::NOT_SCHEDULED)
}

/// Adds a preferred node anti-affinity against `node`, after whatever the template
/// prefers or requires, so the scheduler tries other nodes first but may still pick that
/// one. A template that pins `spec.nodeName` bypasses the scheduler: left untouched.
pub fn avoid_node(pod: &mut Pod, node: &str) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    if spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
        return;
    }
    let term = PreferredSchedulingTerm {
        // The strongest preference: a kubelet that just refused the pod is likely to again.
        weight: 100,
        preference: NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: HOSTNAME_LABEL.into(),
                operator: "NotIn".into(),
                values: Some(vec![node.to_string()]),
            }]),
            match_fields: None,
        },
    };
    spec.affinity
        .get_or_insert_with(Default::default)
        .node_affinity
        .get_or_insert_with(Default::default)
        .preferred_during_scheduling_ignored_during_execution
        .get_or_insert_with(Vec::new)
        .push(term);
}

#[cfg(test)]
mod avoid_node_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pod_carries_name_label_annotations_finalizer_and_owner() {
        let ws: Workspace = serde_json::from_value(json!({
            "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "alice", "namespace": "team", "uid": "ws-uid", "generation": 4},
            "spec": {"podTemplate": {
                "metadata": {"labels": {"team": "blue"}, "finalizers": ["example.com/keep"]},
                "spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}
        }))
        .expect("workspace literal");
        let pod = build(&ws, 3, Some(2));
        assert_eq!(pod.metadata.name.as_deref(), Some("ws-alice"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("team"));
        let labels = pod.metadata.labels.expect("labels");
        assert_eq!(labels.get("team").map(String::as_str), Some("blue"));
        assert_eq!(
            labels.get(WORKSPACE_LABEL).map(String::as_str),
            Some("alice")
        );
        let annotations = pod.metadata.annotations.expect("annotations");
        assert_eq!(
            annotations.get(START_ANNOTATION).map(String::as_str),
            Some("3")
        );
        assert_eq!(
            annotations.get(RECREATION_ANNOTATION).map(String::as_str),
            Some("2")
        );
        assert_eq!(
            annotations.get(GENERATION_ANNOTATION).map(String::as_str),
            Some("4"),
            "the spec generation the pod is built from"
        );
        assert_eq!(
            pod.metadata.finalizers,
            Some(vec![POD_FINALIZER.to_string()]),
            "the template's own finalizer would hold the released pod"
        );
        let owner = &pod.metadata.owner_references.expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("Workspace", "ws-uid", Some(true))
        );
        assert!(
            build(&ws, 1, None)
                .metadata
                .annotations
                .expect("a")
                .contains_key(RECREATION_ANNOTATION)
                .eq(&false)
        );
    }

    #[test]
    fn template_keys_under_lifeguard_dev_never_reach_the_pod() {
        let ws: Workspace = serde_json::from_value(json!({
            "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "alice", "namespace": "team", "uid": "ws-uid"},
            "spec": {"podTemplate": {
                "metadata": {
                    "labels": {"team": "blue", "lifeguard.dev/workspace": "mallory",
                               "x.lifeguard.dev/extra": "1"},
                    "annotations": {"lifeguard.dev/recreation": "1", "lifeguard.dev/start": "9",
                                    "example.com/lifeguard.dev": "kept", "note": "kept"}},
                "spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}
        }))
        .expect("workspace literal");
        let pod = build(&ws, 1, None);
        let labels = pod.metadata.labels.expect("labels");
        let annotations = pod.metadata.annotations.expect("annotations");
        assert_eq!(
            labels.get(WORKSPACE_LABEL).map(String::as_str),
            Some("alice"),
            "the workspace label is the controller's, whatever the template says"
        );
        assert!(!labels.contains_key("x.lifeguard.dev/extra"), "{labels:?}");
        assert_eq!(labels.get("team").map(String::as_str), Some("blue"));
        assert!(
            !annotations.contains_key(RECREATION_ANNOTATION),
            "a first start must not carry the re-creation marker: {annotations:?}"
        );
        assert_eq!(
            annotations.get(START_ANNOTATION).map(String::as_str),
            Some("1")
        );
        assert_eq!(
            annotations
                .get("example.com/lifeguard.dev")
                .map(String::as_str),
            Some("kept")
        );
        assert_eq!(annotations.get("note").map(String::as_str), Some("kept"));
    }

    #[test]
    fn pod_carries_the_workspace_labels_for_workspace_selectors() {
        let ws: Workspace = serde_json::from_value(json!({
            "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "alice", "namespace": "team", "labels": {"team": "red", "tier": "gpu"}},
            "spec": {"podTemplate": {
                "metadata": {"labels": {"team": "blue"}},
                "spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}
        }))
        .expect("workspace literal");
        let pod = build(&ws, 1, None);
        let annotations = pod.metadata.annotations.expect("annotations");
        let carried: std::collections::BTreeMap<String, String> = serde_json::from_str(
            annotations
                .get(WORKSPACE_LABELS_ANNOTATION)
                .expect("workspace labels annotation"),
        )
        .expect("a JSON string map");
        assert_eq!(&carried, ws.labels());
        assert_eq!(
            pod.metadata
                .labels
                .expect("labels")
                .get("team")
                .map(String::as_str),
            Some("blue"),
            "the pod's own labels stay the template's"
        );
    }

    #[test]
    fn tolerations_that_defeat_lifeguards_taints_are_found() {
        let pod = |tolerations: serde_json::Value| -> Pod {
            serde_json::from_value(json!({"spec": {"containers": [], "tolerations": tolerations}}))
                .expect("pod literal")
        };
        // (what, tolerations, lifeguard taints tolerated)
        let cases: [(&str, serde_json::Value, &[&str]); 7] = [
            ("none", json!([]), &[]),
            (
                "the unhealthy taint by key",
                json!([{"key": NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]),
                &[NODE_TAINT_KEY],
            ),
            (
                "the unproven taint, any effect",
                json!([{"key": NODE_UNPROVEN_KEY, "operator": "Exists"}]),
                &[NODE_UNPROVEN_KEY],
            ),
            (
                "every taint (operator Exists, no key)",
                json!([{"operator": "Exists"}]),
                &[NODE_TAINT_KEY, NODE_UNPROVEN_KEY],
            ),
            (
                "another NoExecute taint only",
                json!([{"key": NODE_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}]),
                &[],
            ),
            (
                "someone else's taint",
                json!([{"key": "gpu", "operator": "Exists"}]),
                &[],
            ),
            (
                "no key but operator Equal: tolerates nothing of ours",
                json!([{"operator": "Equal", "value": "x"}]),
                &[],
            ),
        ];
        for (what, tolerations, want) in cases {
            assert_eq!(
                tolerated_lifeguard_taints(&pod(tolerations)),
                want,
                "{what}"
            );
        }
    }
}
