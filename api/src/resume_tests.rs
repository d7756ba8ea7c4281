//! Who a window with `resumeAfter` restarts, when, and that each request acts once.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::Workspace;
use crate::hold::hold_tests::spec;
use crate::resume::{Standing, pending_request, request, standing};
use crate::validation::validate_maintenance_window;

const UNTIL: &str = "2026-12-01T23:00:00Z";

fn at(text: &str) -> Timestamp {
    text.parse().expect("instant")
}

/// A workspace with these annotations, in `phase`, having acted on `resumed`.
fn ws(annotations: Value, phase: &str, resumed: Option<&str>, deleting: bool) -> Workspace {
    let mut meta = json!({"name": "alice", "namespace": "dev", "annotations": annotations});
    if deleting {
        meta["deletionTimestamp"] = json!("2026-12-01T23:30:00Z");
    }
    serde_json::from_value(json!({
        "metadata": meta, "spec": {"podTemplate": {}},
        "status": {"phase": phase, "resumed": resumed}
    }))
    .expect("workspace literal")
}

fn drained_by(window: &str) -> Value {
    json!({"lifeguard.dev/drained-by": window, "lifeguard.dev/drained-until": UNTIL})
}

fn asked(window: &str) -> Value {
    json!({"lifeguard.dev/resume": request(window, at(UNTIL))})
}

#[test]
fn resume_after_needs_drain() {
    let refused = validate_maintenance_window(&spec(json!({"resumeAfter": true})));
    let message = refused.expect_err("refused").to_string();
    assert!(
        message.contains("spec.resumeAfter") && message.contains("needs drain: true"),
        "{message}"
    );
    assert!(
        validate_maintenance_window(&spec(json!({"resumeAfter": true, "drain": true}))).is_ok()
    );
}

#[test]
fn a_request_names_its_window_and_occurrence() {
    let value = request("node-pool-b", at(UNTIL));
    assert_eq!(value, "node-pool-b/2026-12-01T23:00:00Z");
    assert_eq!(
        crate::resume::parse_request(&value),
        Some(("node-pool-b", at(UNTIL)))
    );
    assert_eq!(crate::resume::parse_request("no-slash"), None);
    assert_eq!(crate::resume::parse_request("w/yesterday"), None);
}

#[test]
fn what_a_window_does_with_each_workspace() {
    let after = at("2026-12-01T23:00:01Z");
    let due = Standing::Due(request("upgrade", at(UNTIL)));
    let own = request("upgrade", at(UNTIL));
    let cases = [
        (
            "drained, occurrence over, stopped",
            ws(drained_by("upgrade"), "Stopped", None, false),
            after,
            due.clone(),
        ),
        (
            "occurrence not over yet",
            ws(drained_by("upgrade"), "Stopped", None, false),
            at("2026-12-01T22:59:59Z"),
            Standing::Untouched,
        ),
        (
            "still stopping",
            ws(drained_by("upgrade"), "Stopping", None, false),
            after,
            Standing::Untouched,
        ),
        (
            "failed",
            ws(drained_by("upgrade"), "Failed", None, false),
            after,
            Standing::Untouched,
        ),
        (
            "being deleted",
            ws(drained_by("upgrade"), "Stopped", None, true),
            after,
            Standing::Untouched,
        ),
        (
            "another window's drain",
            ws(drained_by("other"), "Stopped", None, false),
            after,
            Standing::Untouched,
        ),
        (
            "no occurrence end recorded",
            ws(
                json!({"lifeguard.dev/drained-by": "upgrade"}),
                "Stopped",
                None,
                false,
            ),
            after,
            Standing::Untouched,
        ),
        (
            "asked, not acted on",
            ws(asked("upgrade"), "Stopped", None, false),
            after,
            Standing::Resuming,
        ),
        (
            "asked, starting",
            ws(asked("upgrade"), "Creating", Some(&own), false),
            after,
            Standing::Resuming,
        ),
        (
            "asked, running again",
            ws(asked("upgrade"), "Running", Some(&own), false),
            after,
            Standing::Untouched,
        ),
        (
            "asked, ran, stopped again",
            ws(asked("upgrade"), "Stopped", Some(&own), false),
            after,
            Standing::Untouched,
        ),
        (
            "another window's request",
            ws(asked("other"), "Creating", None, false),
            after,
            Standing::Untouched,
        ),
    ];
    for (what, workspace, now, want) in cases {
        assert_eq!(standing(&workspace, "upgrade", now), want, "{what}");
    }
}

#[test]
fn a_stopped_workspace_acts_on_each_request_once() {
    let own = request("upgrade", at(UNTIL));
    let cases = [
        (
            "asked, stopped",
            ws(asked("upgrade"), "Stopped", None, false),
            Some(own.as_str()),
        ),
        (
            "acted on already",
            ws(asked("upgrade"), "Stopped", Some(&own), false),
            None,
        ),
        (
            "an older request acted on",
            ws(
                asked("upgrade"),
                "Stopped",
                Some("upgrade/2026-11-01T23:00:00Z"),
                false,
            ),
            Some(own.as_str()),
        ),
        (
            "not stopped",
            ws(asked("upgrade"), "Running", None, false),
            None,
        ),
        (
            "a drain marks it again",
            {
                let mut both = asked("upgrade");
                both["lifeguard.dev/drained-by"] = json!("upgrade");
                ws(both, "Stopped", None, false)
            },
            None,
        ),
        (
            "being deleted",
            ws(asked("upgrade"), "Stopped", None, true),
            None,
        ),
        (
            "unreadable request",
            ws(
                json!({"lifeguard.dev/resume": "garbage"}),
                "Stopped",
                None,
                false,
            ),
            None,
        ),
        ("no request", ws(json!({}), "Stopped", None, false), None),
    ];
    for (what, workspace, want) in cases {
        assert_eq!(pending_request(&workspace), want, "{what}");
    }
}
