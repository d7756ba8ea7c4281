//! Which drained workspaces a window asks to start again after its occurrence, and how
//! many at once.

use jiff::Timestamp;
use lifeguard_api::Workspace;
use serde_json::{Value, json};

use super::{ResumePlan, resuming};
use crate::window::plan::plan_budget_tests::window;

const UNTIL: &str = "2026-12-01T23:00:00Z";

fn at(text: &str) -> Timestamp {
    text.parse().expect("instant")
}

fn ws(name: &str, annotations: Value, phase: &str) -> Workspace {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "dev", "annotations": annotations},
        "spec": {"podTemplate": {}}, "status": {"phase": phase}
    }))
    .expect("workspace literal")
}

fn drained() -> Value {
    json!({"lifeguard.dev/drained-by": "upgrade", "lifeguard.dev/drained-until": UNTIL})
}

fn asked() -> Value {
    json!({"lifeguard.dev/resume": format!("upgrade/{UNTIL}")})
}

#[test]
fn after_the_occurrence_drained_workspaces_start_again_within_the_budget() {
    let page = [
        ws("a", drained(), "Stopped"),
        ws("b", drained(), "Stopped"),
        ws("c", drained(), "Stopped"),
        ws("starting", asked(), "Creating"),
        ws("running-again", asked(), "Running"),
        ws("never-drained", json!({}), "Stopped"),
    ];
    let after = at("2026-12-01T23:00:05Z");
    // (what, window, asked now, outstanding)
    let cases = [
        (
            "no budget: every one at once",
            window(json!({"resumeAfter": true})),
            vec!["a", "b", "c"],
            4,
        ),
        (
            "budget 2: one slot beside the one starting",
            window(json!({"resumeAfter": true, "maxConcurrentDrains": 2})),
            vec!["a"],
            4,
        ),
        (
            "budget 1: the one starting holds it",
            window(json!({"resumeAfter": true, "maxConcurrentDrains": 1})),
            vec![],
            4,
        ),
    ];
    for (what, w, want, outstanding) in cases {
        assert!(resuming(&w, after), "{what}");
        let mut plan = ResumePlan::at(after);
        plan.add(&w, &page);
        plan.limit(&w);
        let asked: Vec<&str> = plan.to_resume.iter().map(|(_, n, _)| n.as_str()).collect();
        assert_eq!(asked, want, "{what}");
        assert_eq!(plan.outstanding(), outstanding, "{what}");
        for (_, _, request) in &plan.to_resume {
            assert_eq!(request, &format!("upgrade/{UNTIL}"), "{what}");
        }
    }
}

#[test]
fn only_after_the_occurrence_and_only_when_asked_for() {
    let during = at("2026-12-01T22:30:00Z");
    let after = at("2026-12-01T23:00:00Z");
    assert!(!resuming(&window(json!({"resumeAfter": true})), during));
    assert!(resuming(&window(json!({"resumeAfter": true})), after));
    assert!(!resuming(&window(json!({})), after), "resumeAfter not set");
    assert!(
        !resuming(
            &window(json!({"resumeAfter": true, "enforcement": "DryRun"})),
            after
        ),
        "a DryRun window stopped nobody"
    );
}
