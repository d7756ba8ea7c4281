//! Steering, pure: while a node-scoped window is active, a covered workspace pod gets a
//! required node affinity that keeps it off the window's nodes, instead of being denied.
//! Done here rather than by the controller so that it holds for every client that creates
//! a workspace pod, and with no Node lookup: the window's node selector is negated term by
//! term (`lifeguard_api::node_scope::avoid_terms`).

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use k8s_openapi::api::core::v1::NodeSelectorTerm;
use lifeguard_api::node_scope::avoid_terms;
use lifeguard_api::window::CompiledWindow;
use serde_json::{Value, json};

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";

/// The JSON Patch operations that add the affinity for `windows` (the active node-scoped
/// windows covering the pod) to a pod whose `spec.affinity` is `affinity`. None when no
/// window applies.
pub fn steer(affinity: Option<&Value>, windows: &[&CompiledWindow]) -> Vec<PatchOperation> {
    let selectors: Vec<_> = windows
        .iter()
        .filter_map(|w| w.node_label_selector.as_ref())
        .collect();
    if selectors.is_empty() {
        return Vec::new();
    }
    let node_affinity = affinity.and_then(|a| a.get("nodeAffinity"));
    let required = node_affinity.and_then(|n| n.get(REQUIRED));
    // A term list that does not decode is left for the API server to refuse; steering
    // starts from none then, which is stricter, never looser.
    let existing: Vec<NodeSelectorTerm> = required
        .and_then(|r| r.get("nodeSelectorTerms"))
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    let mut terms = existing;
    for selector in selectors {
        terms = avoid_terms(selector, &terms);
    }
    let terms = json!(terms);
    let present = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    let (path, value): (&[&str], Value) = if !present(affinity) {
        (
            &["spec", "affinity"],
            json!({"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": terms}}}),
        )
    } else if !present(node_affinity) {
        (
            &["spec", "affinity", "nodeAffinity"],
            json!({REQUIRED: {"nodeSelectorTerms": terms}}),
        )
    } else if !present(required) {
        (
            &["spec", "affinity", "nodeAffinity", REQUIRED],
            json!({"nodeSelectorTerms": terms}),
        )
    } else {
        // `add` on an existing member replaces it: the new terms already AND the old ones.
        (
            &[
                "spec",
                "affinity",
                "nodeAffinity",
                REQUIRED,
                "nodeSelectorTerms",
            ],
            terms,
        )
    };
    vec![PatchOperation::Add(AddOperation {
        path: PointerBuf::from_tokens(path.iter().copied()),
        value,
    })]
}

#[cfg(test)]
#[path = "steer_tests.rs"]
mod steer_tests;
