//! Postponed drains: who a draining window leaves running for now, how they are counted,
//! and that a postponement runs out by the window's cap.

use std::collections::BTreeMap;

use jiff::Timestamp;
use lifeguard_api::Workspace;
use lifeguard_api::names::{DRAINED_BY_ANNOTATION, POSTPONE_DRAIN_ANNOTATION};
use serde_json::{Value, json};

use super::plan_budget_tests::window;
use super::*;

const START: &str = "2026-12-01T22:00:00Z";

/// A Running workspace in `dev` with these annotations.
fn ws(name: &str, annotations: Value) -> Workspace {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "dev", "annotations": annotations},
        "spec": {"podTemplate": {}},
        "status": {"phase": "Running"}
    }))
    .expect("workspace literal")
}

fn at(text: &str) -> Timestamp {
    text.parse().expect("instant")
}

#[test]
fn a_postponed_workspace_is_stopped_when_its_postponement_runs_out() {
    let workspaces = [
        ws("on-time", json!({})),
        ws("twenty", json!({POSTPONE_DRAIN_ANNOTATION: "20m"})),
        ws("greedy", json!({POSTPONE_DRAIN_ANNOTATION: "5h"})),
        ws("unreadable", json!({POSTPONE_DRAIN_ANNOTATION: "later"})),
        // Already asked to stop: a request written afterwards changes nothing.
        ws(
            "asked",
            json!({POSTPONE_DRAIN_ANNOTATION: "20m", DRAINED_BY_ANNOTATION: "upgrade"}),
        ),
    ];
    let capped = window(json!({"maxPostpone": "30m"}));
    // (what, window, now, stopped now, postponed, in flight)
    let cases: Vec<(&str, &CompiledWindow, &str, Vec<&str>, u32)> = vec![
        (
            "at the start: only those who did not ask (or asked unreadably)",
            &capped,
            "2026-12-01T22:00:01Z",
            vec!["on-time", "unreadable"],
            2,
        ),
        (
            "after 20 minutes: the 20-minute request has run out",
            &capped,
            "2026-12-01T22:20:00Z",
            vec!["on-time", "twenty", "unreadable"],
            1,
        ),
        (
            "after the cap: a request over it has run out too",
            &capped,
            "2026-12-01T22:30:00Z",
            vec!["on-time", "twenty", "greedy", "unreadable"],
            0,
        ),
    ];
    let namespaces = BTreeMap::new();
    for (what, window, now, want_stopped, want_postponed) in cases {
        let mut plan = Drain::at(at(START), at(now));
        plan.add(window, &workspaces, &namespaces, None);
        plan.limit(window);
        let stopped: Vec<&str> = plan.to_stop.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(stopped, want_stopped, "{what}");
        assert_eq!(plan.postponed, want_postponed, "{what}");
        assert_eq!(plan.in_flight, 1, "{what}: the one asked before");
        // Postponed workspaces still count as remaining: the window is not Drained.
        assert_eq!(plan.remaining, 5, "{what}");
        assert_eq!(
            plan.postponed_first.len(),
            want_postponed as usize,
            "{what}"
        );
    }
}

#[test]
fn a_window_without_a_cap_postpones_nobody() {
    let workspaces = [ws("twenty", json!({POSTPONE_DRAIN_ANNOTATION: "20m"}))];
    let mut plan = Drain::at(at(START), at("2026-12-01T22:00:01Z"));
    let uncapped = window(json!({}));
    plan.add(&uncapped, &workspaces, &BTreeMap::new(), None);
    assert_eq!(plan.postponed, 0);
    assert_eq!(plan.to_stop.len(), 1);
}

#[test]
fn a_postponed_stop_holds_no_budget_slot() {
    // Budget 1: the postponed workspace does not take the one slot from the others.
    let workspaces = [
        ws("twenty", json!({POSTPONE_DRAIN_ANNOTATION: "20m"})),
        ws("a", json!({})),
        ws("b", json!({})),
    ];
    let budgeted = window(json!({"maxPostpone": "30m", "maxConcurrentDrains": 1}));
    let mut plan = Drain::at(at(START), at("2026-12-01T22:00:01Z"));
    plan.add(&budgeted, &workspaces, &BTreeMap::new(), None);
    plan.limit(&budgeted);
    let stopped: Vec<&str> = plan.to_stop.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(stopped, vec!["a"]);
    assert_eq!(plan.postponed, 1);
}
