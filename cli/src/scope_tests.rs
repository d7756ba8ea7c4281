//! The budget flag, the per-node table, the progress line and the preview, one row per case.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;

fn window(spec: Value, status: Value) -> MaintenanceWindow {
    serde_json::from_value(json!({"metadata": {"name": "pool-b"}, "spec": spec, "status": status}))
        .expect("window literal")
}

#[test]
fn the_budget_flag_is_a_number_or_a_percentage() {
    assert_eq!(budget_flag("2"), IntOrString::Int(2));
    assert_eq!(budget_flag(" 25% "), IntOrString::String("25%".into()));
    assert_eq!(
        budget_flag("0"),
        IntOrString::Int(0),
        "validation says 0 is wrong"
    );
}

#[test]
fn status_shows_each_node_and_the_progress_line_counts_the_drain() {
    let w = window(
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true,
               "drainPaused": true, "nodeSelector": {"matchLabels": {"pool": "b"}}}),
        json!({"active": true, "workspacesRemaining": 2, "workspacesDrained": 1, "workspacesInFlight": 1,
               "workspacesPostponed": 1,
               "nodes": [{"node": "node-2", "workspacesLeft": 2, "drained": false},
                         {"node": "node-3", "workspacesLeft": 0, "drained": true}]}),
    );
    let nodes = &w.status.as_ref().expect("status").nodes;
    assert_eq!(
        node_table(nodes),
        "NODE     WORKSPACES LEFT   DRAINED\nnode-2   2                 false\nnode-3   0                 true\n"
    );
    assert_eq!(
        progress(&w),
        "drained 1/3, 1 in flight, 1 postponed, paused; node-2 2 left, node-3 drained"
    );
    assert_eq!(node_drained(&w, "node-3"), Some(true));
    assert_eq!(node_drained(&w, "node-2"), Some(false));
    assert_eq!(node_drained(&w, "node-1"), None, "not selected");
    let plain = window(
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"}),
        json!({"active": true}),
    );
    assert_eq!(node_table(&[]), "");
    assert_eq!(progress(&plain), "", "nothing reported yet");
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn ws(ns: &str, name: &str, node: &str, phase: &str) -> Workspace {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"podTemplate": {}},
        "status": {"phase": phase, "nodeName": node}
    }))
    .expect("workspace literal")
}

#[test]
fn preview_lists_what_the_window_covers_now() {
    let namespaces = BTreeMap::from([
        ("dev".to_string(), labels(&[("env", "dev")])),
        ("prod".to_string(), labels(&[("env", "prod")])),
    ]);
    let nodes = BTreeMap::from([
        ("node-1".to_string(), labels(&[("pool", "a")])),
        ("node-2".to_string(), labels(&[("pool", "b")])),
    ]);
    let workspaces = [
        ws("dev", "on-1", "node-1", "Running"),
        ws("dev", "on-2", "node-2", "Running"),
        ws("dev", "stopped", "node-2", "Stopped"),
        ws("prod", "prod-on-2", "node-2", "Running"),
    ];
    let compile =
        |spec: Value| CompiledWindow::compile(&window(spec, Value::Null)).expect("valid window");
    let base =
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true});
    let with = |extra: Value| {
        let mut spec = base.clone();
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        compile(spec)
    };
    // (what, window, namespaces, workspaces, nodes)
    type Want = (Vec<&'static str>, Vec<&'static str>, Vec<&'static str>);
    let cases: Vec<(&str, CompiledWindow, Want)> = vec![
        (
            "cluster-wide",
            with(json!({})),
            (
                vec!["dev", "prod"],
                vec!["dev/on-1", "dev/on-2", "prod/prod-on-2"],
                vec!["node-1", "node-2"],
            ),
        ),
        (
            "pool b in dev",
            with(json!({"nodeSelector": {"matchLabels": {"pool": "b"}},
                        "namespaceSelector": {"matchLabels": {"env": "dev"}}})),
            (vec!["dev"], vec!["dev/on-2"], vec!["node-2"]),
        ),
    ];
    for (what, window, want) in cases {
        let p = preview(&window, &namespaces, &workspaces, &nodes);
        assert_eq!(p.namespaces, want.0, "{what}");
        assert_eq!(p.workspaces, want.1, "{what}");
        assert_eq!(p.nodes, want.2, "{what}");
    }
    let text = render_preview(
        "pool-b",
        &Preview {
            namespaces: vec!["dev".into()],
            workspaces: vec![],
            nodes: vec!["node-2".into()],
            occurrence: Some("2026-12-01T22:00:00Z - 2026-12-01T23:00:00Z".into()),
        },
    );
    assert_eq!(
        text,
        "maintenancewindow/pool-b covers now:\nnamespaces (1):\n  dev\nworkspaces it would drain (0):\n  (none)\nnodes (1):\n  node-2\nnext occurrence: 2026-12-01T22:00:00Z - 2026-12-01T23:00:00Z\n"
    );
}

#[test]
fn the_logged_line_has_no_countdown_so_it_changes_only_when_something_happens() {
    let now: jiff::Timestamp = "2026-12-01T22:58:00Z".parse().expect("time");
    let later: jiff::Timestamp = "2026-12-01T22:59:00Z".parse().expect("time");
    let opening = DrainState::NotYetOpen {
        opens: "2026-12-01T23:00:00Z".parse().expect("time"),
    };
    assert_eq!(
        settled_description(&opening, now),
        settled_description(&opening, later)
    );
    assert_eq!(
        settled_description(&opening, now),
        "not open yet; opens at 2026-12-01T23:00:00Z"
    );
    assert_eq!(
        with_progress(
            settled_description(&DrainState::Draining { remaining: 2 }, now),
            "drained 1/3"
        ),
        "2 workspaces remaining (drained 1/3)"
    );
    assert_eq!(with_progress("x".into(), ""), "x");
}
