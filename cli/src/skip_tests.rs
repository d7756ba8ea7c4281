//! Which occurrence `maintenance skip` skips, and what it refuses.

use jiff::Timestamp;
use lifeguard_api::MaintenanceWindow;
use serde_json::{Value, json};

use super::{Target, plan};

fn window(spec: Value) -> MaintenanceWindow {
    serde_json::from_value(json!({"metadata": {"name": "nightly"}, "spec": spec})).expect("window")
}

fn ts(text: &str) -> Timestamp {
    text.parse().expect("time")
}

#[test]
fn the_occurrence_skipped_and_what_is_refused() {
    let nightly = json!({"schedule": "0 22 * * *", "duration": "4h"});
    let new_york =
        json!({"schedule": "30 2 * * *", "duration": "1h", "timeZone": "America/New_York"});
    // (what, spec, target, now, expected (start, end) or error fragment)
    type Row = (
        &'static str,
        Value,
        Target,
        &'static str,
        Result<(&'static str, &'static str), &'static str>,
    );
    let rows: Vec<Row> = vec![
        (
            "--next before the night: tonight's",
            nightly.clone(),
            Target::Next,
            "2026-12-01T12:00:00Z",
            Ok(("2026-12-01T22:00:00Z", "2026-12-02T02:00:00Z")),
        ),
        (
            "--next during the night: the one in force (it ends now)",
            nightly.clone(),
            Target::Next,
            "2026-12-01T23:00:00Z",
            Ok(("2026-12-01T22:00:00Z", "2026-12-02T02:00:00Z")),
        ),
        (
            "--on a day",
            nightly.clone(),
            Target::parse_on("2026-12-24").expect("day"),
            "2026-12-01T12:00:00Z",
            Ok(("2026-12-24T22:00:00Z", "2026-12-25T02:00:00Z")),
        ),
        (
            "--on a time inside an occurrence",
            nightly.clone(),
            Target::parse_on("2026-12-24T23:00:00Z").expect("time"),
            "2026-12-01T12:00:00Z",
            Ok(("2026-12-24T22:00:00Z", "2026-12-25T02:00:00Z")),
        ),
        (
            "--on the New York gap day: the occurrence moved to 03:00 EDT",
            new_york,
            Target::parse_on("2026-03-08").expect("day"),
            "2026-03-01T12:00:00Z",
            Ok(("2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z")),
        ),
        (
            "an occurrence already skipped",
            json!({"schedule": "0 22 * * *", "duration": "4h",
                   "exclusions": [{"start": "2026-12-24", "end": "2026-12-24", "reason": "Christmas"}]}),
            Target::parse_on("2026-12-24").expect("day"),
            "2026-12-01T12:00:00Z",
            Err("already skipped (Christmas)"),
        ),
        (
            "a past occurrence",
            nightly.clone(),
            Target::parse_on("2026-11-24").expect("day"),
            "2026-12-01T12:00:00Z",
            Err("is over"),
        ),
        (
            "a one-off window",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"}),
            Target::Next,
            "2026-12-01T12:00:00Z",
            Err("one-off window"),
        ),
    ];
    for (what, spec, target, now, expected) in rows {
        let got = plan(&window(spec), &target, Some("release week"), ts(now));
        match (got, expected) {
            (Ok(skip), Ok((start, end))) => {
                assert_eq!(skip.exclusion.start, start, "{what}");
                assert_eq!(skip.exclusion.end, end, "{what}");
                assert_eq!(
                    skip.exclusion.reason.as_deref(),
                    Some("release week"),
                    "{what}"
                );
                assert_eq!(skip.exclusions.last(), Some(&skip.exclusion), "{what}");
            }
            (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{what}: {e}"),
            (got, expected) => panic!("{what}: got {got:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn on_takes_a_date_or_a_time_and_nothing_else() {
    assert!(Target::parse_on("christmas").is_err());
    assert!(Target::parse_on("2026-12-24T22:00:00").is_err());
}
