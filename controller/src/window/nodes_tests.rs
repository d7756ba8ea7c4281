//! Which nodes a window marks, clears or leaves alone, one row per situation.

use std::collections::BTreeMap;

use lifeguard_api::MaintenanceWindow;
use serde_json::json;

use super::*;

fn node(name: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> NodeMeta {
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    NodeMeta {
        name: name.into(),
        labels: map(labels),
        annotations: map(annotations),
    }
}

fn pool_b() -> CompiledWindow {
    let w: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": "upgrade"},
        "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true,
                 "nodeSelector": {"matchLabels": {"pool": "b"}}}
    }))
    .expect("window literal");
    CompiledWindow::compile(&w).expect("valid window")
}

const W: &str = NODE_WINDOW_ANNOTATION;
const D: &str = NODE_DRAINED_LABEL;

#[test]
fn the_tally_lists_selected_nodes_and_what_is_left() {
    let nodes = [
        node("a1", &[("pool", "a")], &[]),
        node("b1", &[("pool", "b")], &[]),
        node("b2", &[("pool", "b")], &[]),
    ];
    let mut tally = NodeTally::for_nodes(&pool_b(), &nodes);
    assert!(!tally.selects("a1") && tally.selects("b1"));
    tally.count("b1");
    tally.count("b1");
    tally.count("a1");
    let status: Vec<(String, u32, bool)> = tally
        .status()
        .into_iter()
        .map(|n| (n.node, n.workspaces_left, n.drained))
        .collect();
    assert_eq!(
        status,
        vec![("b1".into(), 2, false), ("b2".into(), 0, true)],
        "a node that is not selected is neither listed nor counted"
    );
}

#[test]
fn node_changes_mark_selected_nodes_and_clear_what_this_window_left() {
    let nodes = [
        node("a1", &[("pool", "a")], &[]),
        node("b1", &[("pool", "b")], &[]),
        node("b2", &[("pool", "b"), (D, "true")], &[(W, "upgrade")]),
        node("b3", &[("pool", "b"), (D, "false")], &[(W, "other")]),
        node("a2", &[("pool", "a"), (D, "true")], &[(W, "upgrade")]),
    ];
    let mut tally = NodeTally::for_nodes(&pool_b(), &nodes);
    tally.count("b1");
    let mark = |n: &str, drained| NodeChange::Mark {
        node: n.into(),
        drained,
    };
    let clear = |n: &str| NodeChange::Clear { node: n.into() };
    // (what, tally, want)
    let cases = [
        (
            "active: b1 not drained, b2 already right, b3 another window's, a2 no longer selected",
            Some(&tally),
            vec![mark("b1", false), clear("a2")],
        ),
        (
            "over: everything this window marked is cleared, nothing else",
            None,
            vec![clear("b2"), clear("a2")],
        ),
    ];
    for (what, tally, want) in cases {
        assert_eq!(node_changes("upgrade", tally, &nodes), want, "{what}");
    }
    let mut drained = NodeTally::for_nodes(&pool_b(), &nodes[..2]);
    drained.count("a1");
    assert_eq!(
        node_changes("upgrade", Some(&drained), &nodes[..2]),
        vec![mark("b1", true)],
        "no covered workspace left: drained"
    );
    let flipping = [node(
        "b1",
        &[("pool", "b"), (D, "false")],
        &[(W, "upgrade")],
    )];
    assert_eq!(
        node_changes("upgrade", Some(&drained), &flipping),
        vec![mark("b1", true)],
        "false turns true"
    );
}

#[test]
fn the_sweep_finds_nodes_of_windows_that_are_gone() {
    let nodes = [
        node("n1", &[(D, "true")], &[(W, "deleted")]),
        node("n2", &[(D, "false")], &[(W, "live")]),
        node("n3", &[(D, "true")], &[]),
        node("n4", &[], &[]),
    ];
    let found: Vec<&str> = orphaned(&nodes, |w| w == "live")
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(found, vec!["n1", "n3"]);
}

#[test]
fn a_node_scoped_window_applies_only_on_its_nodes() {
    let everywhere: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": "everywhere"},
        "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true}
    }))
    .expect("window literal");
    let everywhere = CompiledWindow::compile(&everywhere).expect("valid window");
    let names = |node: Option<&[(&str, &str)]>| -> Vec<String> {
        let labels = node.map(node_meta_labels);
        for_node(vec![pool_b(), everywhere.clone()], labels.as_ref())
            .into_iter()
            .map(|w| w.name)
            .collect()
    };
    assert_eq!(names(Some(&[("pool", "b")])), ["upgrade", "everywhere"]);
    assert_eq!(names(Some(&[("pool", "a")])), ["everywhere"]);
    assert_eq!(names(None), ["everywhere"], "no pod: no node-scoped notice");
}

fn node_meta_labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    node("n", pairs, &[]).labels
}
