//! The window plan for `Warn`/`DryRun` windows (count, never stop) and for exclusions
//! (the status names the skipped occurrence and its reason).

use std::collections::BTreeMap;

use jiff::Timestamp;
use lifeguard_api::{MaintenanceWindow, Workspace};
use serde_json::{Value, json};

use super::{SpecCheck, Survey, check_spec, settle};

fn window(spec: Value) -> MaintenanceWindow {
    serde_json::from_value(json!({"metadata": {"name": "upgrade"}, "spec": spec})).expect("window")
}

fn running(name: &str) -> Workspace {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "dev"},
        "spec": {"podTemplate": {}},
        "status": {"phase": "Running"}
    }))
    .expect("workspace")
}

fn ts(text: &str) -> Timestamp {
    text.parse().expect("time")
}

#[test]
fn each_mode_stops_or_only_counts_the_covered_running_workspaces() {
    let now = ts("2026-12-01T22:30:00Z");
    // (enforcement, stops planned, status remaining, status dryRun.wouldDrain)
    let rows = [
        ("Enforce", 2, Some(2), None),
        ("Warn", 0, None, Some(2)),
        ("DryRun", 0, None, Some(2)),
    ];
    for (mode, stops, remaining, would_drain) in rows {
        let mw = window(
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
                               "drain": true, "enforcement": mode}),
        );
        let SpecCheck::Valid(valid) = check_spec(&mw, now) else {
            panic!("{mode}: valid spec");
        };
        assert!(valid.draining, "{mode}: surveyed like a drain");
        let mut survey = Survey::for_window(&valid, None);
        survey.add(
            &valid.window,
            &[running("a"), running("b")],
            &BTreeMap::new(),
        );
        if let Some(drain) = survey.drain.as_mut() {
            drain.limit(&valid.window);
        }
        let planned = survey.drain.as_ref().map_or(0, |d| d.to_stop.len());
        assert_eq!(planned, stops, "{mode}");
        let settled = settle(*valid, &survey, None, now);
        assert_eq!(settled.status.workspaces_remaining, remaining, "{mode}");
        assert_eq!(
            settled.status.dry_run.map(|d| d.would_drain),
            would_drain,
            "{mode}"
        );
        let has_drained_condition = settled
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "Drained");
        assert_eq!(has_drained_condition, mode == "Enforce", "{mode}");
    }
}

#[test]
fn an_excluded_occurrence_is_not_active_and_the_status_says_why() {
    let mw = window(
        json!({"schedule": "0 22 * * *", "duration": "4h", "drain": true,
        "exclusions": [{"start": "2026-12-24", "end": "2026-12-24", "reason": "Christmas"}]}),
    );
    let now = ts("2026-12-24T23:00:00Z");
    let SpecCheck::Valid(valid) = check_spec(&mw, now) else {
        panic!("valid spec");
    };
    assert!(!valid.status.active);
    assert!(!valid.draining);
    let next = valid.status.next_occurrence.as_ref().expect("next");
    assert_eq!(next.start.0, ts("2026-12-25T22:00:00Z"));
    let skipped: Vec<(Timestamp, Option<&str>)> = valid
        .status
        .skipped_occurrences
        .iter()
        .map(|s| (s.start.0, s.reason.as_deref()))
        .collect();
    assert_eq!(
        skipped,
        vec![(ts("2026-12-24T22:00:00Z"), Some("Christmas"))]
    );
    // The controller looks again when the next occurrence that happens opens.
    assert!(valid.requeue.as_secs() <= 300);
}
