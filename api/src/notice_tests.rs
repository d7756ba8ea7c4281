//! Who is told of a coming drain, and when that changes: one row per situation.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::MaintenanceWindow;
use crate::notice::{next_change, notice_for};
use crate::window::CompiledWindow;

fn window(name: &str, spec: Value) -> CompiledWindow {
    let w: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .expect("window literal");
    CompiledWindow::compile(&w).expect("valid window")
}

fn at(text: &str) -> Timestamp {
    text.parse().expect("timestamp literal")
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A one-off drain 22:00 to 23:00 with 15 minutes' notice.
fn upgrade(extra: Value) -> CompiledWindow {
    let mut spec = json!({
        "start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
        "drain": true, "notice": "15m", "message": "node upgrade"
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    window("upgrade", spec)
}

#[test]
fn which_occurrence_a_workspace_is_told_of() {
    let dev = labels(&[("env", "dev")]);
    let none = labels(&[]);
    // (what, windows, at, namespace labels, the notice's window and start)
    type Case<'a> = (
        &'a str,
        Vec<CompiledWindow>,
        &'a str,
        &'a BTreeMap<String, String>,
        Option<(&'a str, &'a str)>,
    );
    let cases: Vec<Case> = vec![
        (
            "long before the notice",
            vec![upgrade(json!({}))],
            "2026-12-01T21:44:59Z",
            &none,
            None,
        ),
        (
            "the notice starts",
            vec![upgrade(json!({}))],
            "2026-12-01T21:45:00Z",
            &none,
            Some(("upgrade", "2026-12-01T22:00:00Z")),
        ),
        (
            "during the notice",
            vec![upgrade(json!({}))],
            "2026-12-01T21:59:59Z",
            &none,
            Some(("upgrade", "2026-12-01T22:00:00Z")),
        ),
        (
            "during the drain",
            vec![upgrade(json!({}))],
            "2026-12-01T22:30:00Z",
            &none,
            Some(("upgrade", "2026-12-01T22:00:00Z")),
        ),
        (
            "the occurrence is over",
            vec![upgrade(json!({}))],
            "2026-12-01T23:00:00Z",
            &none,
            None,
        ),
        (
            "suspended",
            vec![upgrade(json!({"suspend": true}))],
            "2026-12-01T21:50:00Z",
            &none,
            None,
        ),
        (
            "no notice",
            vec![upgrade(json!({"notice": null}))],
            "2026-12-01T21:50:00Z",
            &none,
            None,
        ),
        (
            "another namespace",
            vec![upgrade(
                json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            )],
            "2026-12-01T21:50:00Z",
            &dev,
            None,
        ),
        (
            "the covered namespace",
            vec![upgrade(
                json!({"namespaceSelector": {"matchLabels": {"env": "dev"}}}),
            )],
            "2026-12-01T21:50:00Z",
            &dev,
            Some(("upgrade", "2026-12-01T22:00:00Z")),
        ),
        (
            "the earliest of two windows",
            vec![
                upgrade(json!({})),
                window(
                    "earlier",
                    json!({"start": "2026-12-01T21:55:00Z", "end": "2026-12-01T22:05:00Z", "drain": true, "notice": "1h"}),
                ),
            ],
            "2026-12-01T21:50:00Z",
            &none,
            Some(("earlier", "2026-12-01T21:55:00Z")),
        ),
        (
            "a recurring window's next occurrence",
            vec![window(
                "nightly",
                json!({"schedule": "0 2 * * *", "duration": "1h", "drain": true, "notice": "30m"}),
            )],
            "2026-12-02T01:40:00Z",
            &none,
            Some(("nightly", "2026-12-02T02:00:00Z")),
        ),
        (
            "a recurring window between occurrences",
            vec![window(
                "nightly",
                json!({"schedule": "0 2 * * *", "duration": "1h", "drain": true, "notice": "30m"}),
            )],
            "2026-12-02T12:00:00Z",
            &none,
            None,
        ),
    ];
    for (what, windows, t, namespace_labels, want) in cases {
        let got = notice_for(&windows, namespace_labels, &none, at(t));
        let got = got
            .as_ref()
            .map(|n| (n.window.as_str(), n.start.0.to_string()));
        let want = want.map(|(w, s)| (w, at(s).to_string()));
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn a_notice_carries_the_window_times_and_message() {
    let windows = [upgrade(json!({}))];
    let notice = notice_for(
        &windows,
        &labels(&[]),
        &labels(&[]),
        at("2026-12-01T21:50:00Z"),
    )
    .expect("notified");
    assert_eq!(notice.end.0, at("2026-12-01T23:00:00Z"));
    assert_eq!(notice.message.as_deref(), Some("node upgrade"));
    let text = notice.describe();
    for fact in [
        "upgrade",
        "2026-12-01T22:00:00Z",
        "2026-12-01T23:00:00Z",
        "node upgrade",
    ] {
        assert!(text.contains(fact), "{text:?} lacks {fact:?}");
    }
    let json = serde_json::to_value(&notice).expect("serializes");
    assert_eq!(json["window"], "upgrade");
    assert_eq!(json["start"], "2026-12-01T22:00:00Z");
}

#[test]
fn the_controller_looks_again_when_a_notice_starts_or_ends() {
    let windows = [
        upgrade(json!({})),
        window(
            "plain",
            json!({"start": "2026-12-01T20:00:00Z", "end": "2026-12-01T21:00:00Z"}),
        ),
    ];
    let cases = [
        (
            "before the notice: its start",
            "2026-12-01T12:00:00Z",
            Some("2026-12-01T21:45:00Z"),
        ),
        (
            "during the notice: the end",
            "2026-12-01T21:50:00Z",
            Some("2026-12-01T23:00:00Z"),
        ),
        ("after it: nothing more", "2026-12-01T23:00:00Z", None),
    ];
    for (what, t, want) in cases {
        assert_eq!(next_change(&windows, at(t)), want.map(at), "{what}");
    }
}
