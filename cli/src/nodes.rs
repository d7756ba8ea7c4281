//! What `lifeguard nodes clean` removes from a Node: the prober's condition and taint,
//! which stay on Nodes after the prober is uninstalled (nothing else owns them).
//!
//! Each removal is a JSON patch guarded by a `test` of the entry it removes, so a
//! concurrent change (a prober still running, another controller's taint) makes the patch
//! fail instead of removing the wrong entry.

use k8s_openapi::api::core::v1::Node;
use lifeguard_api::names::{NODE_CONDITION, NODE_TAINT_KEY};
use serde_json::{Value, json};

/// JSON patch operations that remove every lifeguard taint from `spec.taints`.
pub fn taint_removal(node: &Node) -> Vec<Value> {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    // Highest index first: removing an entry shifts the ones after it.
    taints
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, t)| t.key == NODE_TAINT_KEY)
        .flat_map(|(i, t)| {
            [
                json!({"op": "test", "path": format!("/spec/taints/{i}/key"), "value": t.key}),
                json!({"op": "remove", "path": format!("/spec/taints/{i}")}),
            ]
        })
        .collect()
}

/// JSON patch operations for the status subresource that remove the prober's condition.
pub fn condition_removal(node: &Node) -> Vec<Value> {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    conditions
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, c)| c.type_ == NODE_CONDITION)
        .flat_map(|(i, c)| {
            [
                json!({"op": "test", "path": format!("/status/conditions/{i}/type"), "value": c.type_}),
                json!({"op": "remove", "path": format!("/status/conditions/{i}")}),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(taints: Value, conditions: Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "spec": {"taints": taints},
            "status": {"conditions": conditions}
        }))
        .expect("valid node")
    }

    fn condition(type_: &str) -> Value {
        json!({"type": type_, "status": "True"})
    }

    #[test]
    fn removes_only_lifeguard_entries_highest_index_first() {
        let n = node(
            json!([
                {"key": "other", "effect": "NoSchedule"},
                {"key": NODE_TAINT_KEY, "effect": "NoSchedule"},
                {"key": "another", "effect": "NoExecute"}
            ]),
            json!([
                condition("Ready"),
                condition(NODE_CONDITION),
                condition("MemoryPressure")
            ]),
        );
        assert_eq!(
            taint_removal(&n),
            vec![
                json!({"op": "test", "path": "/spec/taints/1/key", "value": NODE_TAINT_KEY}),
                json!({"op": "remove", "path": "/spec/taints/1"}),
            ]
        );
        assert_eq!(
            condition_removal(&n),
            vec![
                json!({"op": "test", "path": "/status/conditions/1/type", "value": NODE_CONDITION}),
                json!({"op": "remove", "path": "/status/conditions/1"}),
            ]
        );
    }

    #[test]
    fn several_entries_are_removed_from_the_end_so_indexes_stay_valid() {
        let n = node(
            json!([{"key": NODE_TAINT_KEY, "effect": "NoSchedule"}, {"key": "x", "effect": "NoSchedule"},
                   {"key": NODE_TAINT_KEY, "effect": "NoExecute"}]),
            json!([]),
        );
        let ops = taint_removal(&n);
        let paths: Vec<&str> = ops
            .iter()
            .filter(|op| op["op"] == "remove")
            .filter_map(|op| op["path"].as_str())
            .collect();
        assert_eq!(paths, ["/spec/taints/2", "/spec/taints/0"]);
    }

    #[test]
    fn a_clean_node_needs_no_patch() {
        let n = node(
            json!([{"key": "x", "effect": "NoSchedule"}]),
            json!([condition("Ready")]),
        );
        assert!(taint_removal(&n).is_empty());
        assert!(condition_removal(&n).is_empty());
        let bare: Node = serde_json::from_value(json!({"metadata": {"name": "n2"}})).expect("node");
        assert!(taint_removal(&bare).is_empty());
        assert!(condition_removal(&bare).is_empty());
    }
}
