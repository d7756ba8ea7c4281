//! Which nodes a window marks, clears or leaves alone, one row per situation.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::names::POD_FINALIZER;
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

#[test]
fn a_pod_still_held_keeps_its_node_from_being_drained() {
    let meta = |deleting: bool, finalizers: &[&str]| ObjectMeta {
        deletion_timestamp: deleting.then_some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
        ),
        finalizers: Some(finalizers.iter().map(|f| f.to_string()).collect()),
        ..ObjectMeta::default()
    };
    // (what, pod, counts)
    let cases = [
        ("being saved", meta(true, &[POD_FINALIZER]), 1),
        (
            "being saved, beside another finalizer",
            meta(true, &["example.com/x", POD_FINALIZER]),
            1,
        ),
        ("released, still Terminating", meta(true, &[]), 0),
        (
            "running: its Workspace counts, if covered",
            meta(false, &[POD_FINALIZER]),
            0,
        ),
    ];
    for (what, pod, want) in &cases {
        assert_eq!(held_pods([pod]), *want, "{what}");
    }

    let nodes = [node("b1", &[("pool", "b")], &[])];
    let mut tally = NodeTally::for_nodes(&pool_b(), &nodes);
    assert_eq!(tally.empty_nodes().collect::<Vec<_>>(), ["b1"]);
    tally.count_held("b1", held_pods(cases.iter().map(|(_, pod, _)| pod)));
    tally.count_held("a1", 5);
    assert_eq!(
        node_changes("upgrade", Some(&tally), &nodes),
        vec![NodeChange::Mark {
            node: "b1".into(),
            drained: false
        }],
        "a Workspace deleted (or relabelled) during the drain: its pod is still being saved"
    );
    assert_eq!(tally.status()[0].workspaces_left, 2);
}

fn window_at(
    name: &str,
    spec: serde_json::Value,
    reported: serde_json::Value,
) -> MaintenanceWindow {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": spec,
        "status": {"nodes": reported},
    }))
    .expect("window literal")
}

#[test]
fn a_node_is_drained_only_when_every_window_that_drains_it_has_nothing_left() {
    let nodes = [
        node("b1", &[("pool", "b")], &[]),
        node("b2", &[("pool", "b")], &[]),
    ];
    let now: Timestamp = "2026-12-01T22:30:00Z".parse().expect("instant");
    let pool_b_spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
                        "drain": true, "nodeSelector": {"matchLabels": {"pool": "b"}}});
    let with = |extra: serde_json::Value| {
        let mut spec = pool_b_spec.clone();
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        spec
    };
    let b1_left = |n: u32| {
        json!([{"node": "b1", "workspacesLeft": n, "drained": n == 0},
                                  {"node": "b2", "workspacesLeft": 0, "drained": true}])
    };
    // (what, the other window, nodes it keeps from being drained)
    let cases: [(&str, MaintenanceWindow, &[&str]); 8] = [
        (
            "it still has one on b1",
            window_at("other", pool_b_spec.clone(), b1_left(1)),
            &["b1"],
        ),
        (
            "it has nothing left",
            window_at("other", pool_b_spec.clone(), b1_left(0)),
            &[],
        ),
        (
            "it has not surveyed yet: it may have some anywhere it selects",
            window_at("other", pool_b_spec.clone(), json!([])),
            &["b1", "b2"],
        ),
        (
            "its own `drained` is not asked, so two windows never wait on each other",
            window_at(
                "other",
                pool_b_spec.clone(),
                json!([{"node": "b1", "workspacesLeft": 0, "drained": false},
                             {"node": "b2", "workspacesLeft": 0, "drained": false}]),
            ),
            &[],
        ),
        (
            "not active now",
            window_at(
                "other",
                with(json!({"start": "2026-12-02T22:00:00Z", "end": "2026-12-02T23:00:00Z"})),
                json!([]),
            ),
            &[],
        ),
        (
            "warns only",
            window_at("other", with(json!({"enforcement": "Warn"})), json!([])),
            &[],
        ),
        (
            "not node-scoped: it marks no node",
            window_at(
                "other",
                json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true}),
                json!([]),
            ),
            &[],
        ),
        (
            "this window itself",
            window_at("upgrade", pool_b_spec.clone(), json!([])),
            &[],
        ),
    ];
    for (what, other, want) in &cases {
        let pending = pending_elsewhere("upgrade", [other], &nodes, now);
        let want: BTreeSet<String> = want.iter().map(|n| n.to_string()).collect();
        assert_eq!(pending, want, "{what}");
    }

    let mut tally = NodeTally::for_nodes(&pool_b(), &nodes);
    tally.wait_for_other_windows(pending_elsewhere("upgrade", [&cases[0].1], &nodes, now));
    assert_eq!(
        node_changes("upgrade", Some(&tally), &nodes),
        vec![
            NodeChange::Mark {
                node: "b1".into(),
                drained: false
            },
            NodeChange::Mark {
                node: "b2".into(),
                drained: true
            },
        ],
        "b1 waits for the other window; b2 is drained for both"
    );
    let status: Vec<(u32, bool)> = tally
        .status()
        .iter()
        .map(|n| (n.workspaces_left, n.drained))
        .collect();
    assert_eq!(
        status,
        [(0, false), (0, true)],
        "this window has nothing left on b1, which is not yet drained"
    );
}
