//! A workspace a window with `resumeAfter` asks to start again: it says so, records the
//! request, creates its pod as for a first start (the start count goes on), once.

use lifeguard_api::WorkspacePhase;
use serde_json::{Value, json};

use crate::workspace::plan::plan_tests::{kind, now, ws};
use crate::workspace::plan::{Action, Settings, plan};

const REQUEST: &str = "upgrade/2026-12-01T23:00:00Z";

fn asked() -> Value {
    json!({"annotations": {"lifeguard.dev/resume": REQUEST}})
}

#[test]
fn a_resumed_workspace_starts_again_once() {
    let settings = Settings::default();
    let stopped = json!({"phase": "Stopped", "podStarts": 2});
    // First pass: the status says it resumes, and records the request.
    let action = plan(&ws(stopped.clone(), asked()), None, now(), &settings);
    let Action::UpdateStatus(next) = action else {
        panic!("want a status write, got {action:?}");
    };
    assert_eq!(next.phase, Some(WorkspacePhase::Pending));
    assert_eq!(next.resumed.as_deref(), Some(REQUEST));
    let ready = next
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "Resuming")
    );
    assert!(
        ready.message.contains("maintenance window upgrade is over"),
        "{}",
        ready.message
    );

    // Second pass: the pod is created, its start number after the last one.
    let pending = serde_json::to_value(&*next).expect("status");
    assert_eq!(
        kind(&plan(&ws(pending, asked()), None, now(), &settings)),
        "CreatePod { start: 3, recreation: None }"
    );

    let cases: [(&str, Value, Value, &str); 4] = [
        (
            "acted on already, stopped again since",
            json!({"phase": "Stopped", "podStarts": 3, "resumed": REQUEST}),
            asked(),
            "Idle",
        ),
        (
            "drained again: the drain's mark wins",
            json!({"phase": "Stopped", "podStarts": 2}),
            json!({"annotations": {"lifeguard.dev/resume": REQUEST,
                                   "lifeguard.dev/drained-by": "upgrade"}}),
            "Idle",
        ),
        (
            "no request: a stopped workspace stays stopped",
            stopped.clone(),
            json!({}),
            "Idle",
        ),
        (
            "failed: never restarted",
            json!({"phase": "Failed", "podStarts": 2}),
            asked(),
            "Idle",
        ),
    ];
    for (what, status, meta, want) in cases {
        assert_eq!(
            kind(&plan(&ws(status, meta), None, now(), &settings)),
            want,
            "{what}"
        );
    }
}
