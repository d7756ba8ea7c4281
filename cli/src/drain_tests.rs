use serde_json::{Value, json};

use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("test timestamp")
}

const START: &str = "2026-12-01T22:00:00Z";

fn window(spec: Value, generation: i64, status: Value) -> MaintenanceWindow {
    let mut full = json!({"start": START, "end": "2026-12-02T00:00:00Z", "drain": true});
    if let (Some(f), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        f.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "metadata": {"name": "up", "generation": generation}, "spec": full, "status": status
    }))
    .expect("window")
}

fn status(generation: i64, occurrence_start: &str, remaining: Option<u32>, drained: bool) -> Value {
    json!({
        "active": true, "observedGeneration": generation, "workspacesRemaining": remaining,
        "currentOccurrence": {"start": occurrence_start, "end": "2026-12-02T00:00:00Z"},
        "conditions": [{"type": "Drained", "status": if drained { "True" } else { "False" },
                        "reason": "x", "message": "", "lastTransitionTime": START}]
    })
}

#[test]
fn drain_states() {
    let now = ts("2026-12-01T23:00:00Z");
    let cases: Vec<(&str, MaintenanceWindow, DrainState)> = vec![
        (
            "drained",
            window(json!({}), 2, status(2, START, Some(0), true)),
            DrainState::Drained,
        ),
        (
            "draining",
            window(json!({}), 2, status(2, START, Some(3), false)),
            DrainState::Draining { remaining: 3 },
        ),
        (
            "zero without the condition is not trusted yet",
            window(json!({}), 2, status(2, START, Some(0), false)),
            DrainState::Draining { remaining: 0 },
        ),
        (
            "status of an older spec",
            window(json!({}), 3, status(2, START, Some(0), true)),
            DrainState::Unobserved,
        ),
        (
            "status of another occurrence",
            window(
                json!({}),
                2,
                status(2, "2026-11-01T22:00:00Z", Some(0), true),
            ),
            DrainState::Unobserved,
        ),
        (
            "no status yet",
            window(json!({}), 1, Value::Null),
            DrainState::Unobserved,
        ),
        (
            "not open yet",
            window(json!({"start": "2026-12-01T23:30:00Z"}), 1, Value::Null),
            DrainState::NotYetOpen {
                opens: ts("2026-12-01T23:30:00Z"),
            },
        ),
    ];
    for (what, w, want) in cases {
        assert_eq!(drain_state(&w, now), want, "{what}");
    }
    let never = [
        (json!({"drain": false}), "does not drain"),
        (json!({"suspend": true}), "suspended"),
        (json!({"end": "2026-12-01T22:30:00Z"}), "over"),
        (json!({"end": "nope"}), "invalid"),
    ];
    for (spec, part) in never {
        match drain_state(&window(spec.clone(), 1, Value::Null), now) {
            DrainState::Never(why) => assert!(why.contains(part), "{spec}: {why}"),
            other => panic!("{spec}: {other:?}"),
        }
    }
}

#[test]
fn progress_lines_on_change_and_periodically() {
    let mut p = Progress::new(Duration::from_secs(30));
    let s = Duration::from_secs;
    let steps = [
        (
            0,
            "3 workspaces remaining",
            Some("[0s] 3 workspaces remaining"),
        ),
        (2, "3 workspaces remaining", None),
        (
            4,
            "2 workspaces remaining",
            Some("[4s] 2 workspaces remaining"),
        ),
        (30, "2 workspaces remaining", None),
        (
            34,
            "2 workspaces remaining",
            Some("[34s] 2 workspaces remaining"),
        ),
        (36, "2 workspaces remaining", None),
        (
            150,
            "1 workspace remaining",
            Some("[2m30s] 1 workspace remaining"),
        ),
    ];
    for (at, text, want) in steps {
        assert_eq!(
            p.update(text.to_string(), s(at)).as_deref(),
            want,
            "at {at}s"
        );
    }
}

#[test]
fn what_remains() {
    let w = window(
        json!({"namespaceSelector": {"matchLabels": {"team": "ml"}}}),
        1,
        Value::Null,
    );
    let compiled = CompiledWindow::compile(&w).expect("valid");
    let ws = |ns: &str, name: &str, phase: Option<&str>| -> Workspace {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"podTemplate": {}}, "status": phase.map(|p| json!({"phase": p}))
        }))
        .expect("workspace")
    };
    let list = [
        ws("ml", "b", Some("Running")),
        ws("ml", "a", Some("Stopping")),
        ws("ml", "done", Some("Stopped")),
        ws("ml", "broken", Some("Failed")),
        ws("ml", "new", None),
        ws("web", "other", Some("Running")),
    ];
    let labels = BTreeMap::from([
        (
            "ml".to_string(),
            BTreeMap::from([("team".to_string(), "ml".to_string())]),
        ),
        ("web".to_string(), BTreeMap::new()),
    ]);
    assert_eq!(
        remaining(&compiled, &list, &labels),
        ["ml/a (Stopping)", "ml/b (Running)", "ml/new (no phase yet)"]
    );
}

#[test]
fn descriptions() {
    let now = ts("2026-12-01T23:00:00Z");
    assert_eq!(
        describe(&DrainState::Draining { remaining: 1 }, now),
        "1 workspace remaining"
    );
    assert_eq!(
        describe(
            &DrainState::NotYetOpen {
                opens: ts("2026-12-01T23:05:00Z")
            },
            now
        ),
        "not open yet; opens at 2026-12-01T23:05:00Z (in 5m)"
    );
}

#[test]
fn unconfirmed_disposals_of_this_drain() {
    let w = window(
        json!({"namespaceSelector": {"matchLabels": {"team": "ml"}}}),
        1,
        Value::Null,
    );
    let compiled = CompiledWindow::compile(&w).expect("valid");
    let ws = |ns: &str, name: &str, status: &str, reason: &str, at: &str| -> Workspace {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"podTemplate": {}},
            "status": {"phase": "Stopped", "conditions": [{
                "type": "DisposalConfirmed", "status": status, "reason": reason,
                "message": "work may be lost", "lastTransitionTime": at}]}
        }))
        .expect("workspace")
    };
    let list = [
        ws("ml", "saved", "True", "Saved", "2026-12-01T22:05:00Z"),
        ws("ml", "late", "False", "TimedOut", "2026-12-01T22:10:00Z"),
        ws(
            "ml",
            "broken",
            "False",
            "AgentFailed",
            "2026-12-01T22:06:00Z",
        ),
        ws(
            "ml",
            "last-week",
            "False",
            "TimedOut",
            "2026-11-24T22:10:00Z",
        ),
        ws("web", "other", "False", "TimedOut", "2026-12-01T22:10:00Z"),
    ];
    let labels = BTreeMap::from([
        (
            "ml".to_string(),
            BTreeMap::from([("team".to_string(), "ml".to_string())]),
        ),
        ("web".to_string(), BTreeMap::new()),
    ]);
    assert_eq!(
        unconfirmed_disposals(&compiled, &list, &labels, ts("2026-12-01T22:00:00Z")),
        [
            "ml/broken (AgentFailed: work may be lost)",
            "ml/late (TimedOut: work may be lost)"
        ]
    );
}
