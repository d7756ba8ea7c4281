//! A node-scoped drain with a budget: who is stopped now, what is in flight, what is
//! counted, and that a pause starts nothing new.

use std::collections::BTreeMap;

use jiff::Timestamp;
use lifeguard_api::names::DRAINED_BY_ANNOTATION;
use lifeguard_api::{MaintenanceWindow, Workspace};
use serde_json::{Value, json};

use super::super::nodes::{NodeMeta, NodeTally};
use super::*;

/// A one-hour one-off `drain: true` window named `upgrade`, with `extra` in its spec.
pub(crate) fn window(extra: Value) -> CompiledWindow {
    let mut spec =
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    let w: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": "upgrade"}, "spec": spec}))
            .expect("window literal");
    CompiledWindow::compile(&w).expect("valid window")
}

/// A workspace in namespace `dev` on `node` in `phase`, drained by `by` if given.
fn ws(name: &str, node: &str, phase: &str, by: Option<&str>) -> Workspace {
    let annotations = by.map_or(json!({}), |w| json!({DRAINED_BY_ANNOTATION: w}));
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "dev", "annotations": annotations},
        "spec": {"podTemplate": {}},
        "status": {"phase": phase, "nodeName": node}
    }))
    .expect("workspace literal")
}

fn nodes() -> Vec<NodeMeta> {
    ["node-1", "node-2"]
        .iter()
        .map(|n| NodeMeta {
            name: n.to_string(),
            labels: BTreeMap::from([("kubernetes.io/hostname".to_string(), n.to_string())]),
            annotations: BTreeMap::new(),
        })
        .collect()
}

fn names(to_stop: &[(String, String)]) -> Vec<&str> {
    to_stop.iter().map(|(_, n)| n.as_str()).collect()
}

#[test]
fn a_node_scoped_drain_stops_within_its_budget() {
    let now: Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
    let namespaces = BTreeMap::new();
    let node_2 = json!({"nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "node-2"}}});
    let with = |extra: Value| {
        let mut spec = node_2.clone();
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        window(spec)
    };
    let workspaces = |in_flight: usize| {
        let mut all = vec![
            ws("one-a", "node-1", "Running", None),
            ws("one-b", "node-1", "Running", None),
            ws("done", "node-2", "Stopped", Some("upgrade")),
        ];
        for (i, name) in ["two-a", "two-b", "two-c"].iter().enumerate() {
            let by = (i < in_flight).then_some("upgrade");
            let phase = if by.is_some() { "Stopping" } else { "Running" };
            all.push(ws(name, "node-2", phase, by));
        }
        all
    };
    // (what, window, in flight before, want: to stop, remaining, in flight, drained)
    type Want = (Vec<&'static str>, u32, u32, u32);
    let cases: Vec<(&str, CompiledWindow, usize, Want)> = vec![
        (
            "no budget: every covered workspace on node 2 at once, node 1 untouched",
            with(json!({})),
            0,
            (vec!["two-a", "two-b", "two-c"], 3, 0, 1),
        ),
        (
            "budget 1, none in flight: one",
            with(json!({"maxConcurrentDrains": 1})),
            0,
            (vec!["two-a"], 3, 0, 1),
        ),
        (
            "budget 1, one in flight: none until it is gone",
            with(json!({"maxConcurrentDrains": 1})),
            1,
            (vec![], 3, 1, 1),
        ),
        (
            "budget 2, one in flight: one more",
            with(json!({"maxConcurrentDrains": 2})),
            1,
            (vec!["two-b"], 3, 1, 1),
        ),
        (
            "50% of the four drained: two at once",
            with(json!({"maxConcurrentDrains": "50%"})),
            1,
            (vec!["two-b"], 3, 1, 1),
        ),
        (
            "paused: the one in flight finishes, nothing new starts",
            with(json!({"maxConcurrentDrains": 2, "drainPaused": true})),
            1,
            (vec![], 3, 1, 1),
        ),
    ];
    for (what, window, in_flight, want) in cases {
        let tally = NodeTally::for_nodes(&window, &nodes());
        let plan = drain(
            &window,
            &workspaces(in_flight),
            &namespaces,
            Some(&tally),
            now,
        )
        .expect("draining");
        assert_eq!(names(&plan.to_stop), want.0, "{what}");
        assert_eq!(
            (plan.remaining, plan.in_flight, plan.drained),
            (want.1, want.2, want.3),
            "{what}"
        );
    }
}

#[test]
fn a_workspace_asked_to_stop_stays_counted_wherever_it_is() {
    let now: Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
    let window =
        window(json!({"nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "node-2"}}}));
    let tally = NodeTally::for_nodes(&window, &nodes());
    // Its node was relabelled out of the selection while it stopped.
    let moved = [ws("two-a", "node-1", "Stopping", Some("upgrade"))];
    let plan = drain(&window, &moved, &BTreeMap::new(), Some(&tally), now).expect("draining");
    assert_eq!((plan.remaining, plan.in_flight), (1, 1));
}

#[test]
fn the_survey_reports_the_counts_and_each_selected_node() {
    let now: Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
    let mw: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": "upgrade", "generation": 1},
        "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true,
                 "maxConcurrentDrains": 1,
                 "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "node-2"}}}
    }))
    .expect("window literal");
    let SpecCheck::Valid(valid) = check_spec(&mw, now) else {
        panic!("valid window");
    };
    assert!(valid.node_scoped && valid.draining);
    let tally = NodeTally::for_nodes(&valid.window, &nodes());
    let mut survey = Survey::for_window(&valid, Some(tally));
    let page = [
        ws("one-a", "node-1", "Running", None),
        ws("two-a", "node-2", "Running", None),
        ws("two-b", "node-2", "Running", None),
    ];
    survey.add(&valid.window, &page, &BTreeMap::new());
    if let Some(drain) = survey.drain.as_mut() {
        drain.limit(&valid.window);
    }
    let settled = settle(*valid, &survey, Some(1), now);
    assert!(settled.requeue <= DRAINING_POLL, "{:?}", settled.requeue);
    let status = settled.status;
    assert_eq!(
        (
            status.workspaces_remaining,
            status.workspaces_in_flight,
            status.workspaces_drained
        ),
        (Some(2), Some(1), Some(0)),
        "two left on node 2, one being stopped now"
    );
    let per_node: Vec<(String, u32, bool)> = status
        .nodes
        .into_iter()
        .map(|n| (n.node, n.workspaces_left, n.drained))
        .collect();
    assert_eq!(per_node, vec![("node-2".to_string(), 2, false)]);
}

#[test]
fn a_node_scoped_window_that_does_not_drain_still_follows_its_nodes() {
    let now: Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
    let mw: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": "upgrade", "generation": 1},
        "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
                 "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "node-2"}}}
    }))
    .expect("window literal");
    let SpecCheck::Valid(valid) = check_spec(&mw, now) else {
        panic!("valid window");
    };
    assert!(valid.node_scoped && !valid.draining);
    let tally = NodeTally::for_nodes(&valid.window, &nodes());
    let mut survey = Survey::for_window(&valid, Some(tally));
    survey.add(
        &valid.window,
        &[ws("two-a", "node-2", "Running", None)],
        &BTreeMap::new(),
    );
    let settled = settle(*valid, &survey, Some(1), now);
    assert!(settled.requeue <= DRAINING_POLL, "{:?}", settled.requeue);
    assert_eq!(
        settled.status.workspaces_remaining, None,
        "no drain, no count"
    );
    assert_eq!(settled.status.nodes.len(), 1);
    assert!(!settled.status.nodes[0].drained);
}
