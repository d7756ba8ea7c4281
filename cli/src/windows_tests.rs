use serde_json::{Value, json};

use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("test timestamp")
}

fn window(spec: Value, status: Value) -> MaintenanceWindow {
    serde_json::from_value(json!({"metadata": {"name": "up"}, "spec": spec, "status": status}))
        .expect("window")
}

#[test]
fn status_rows() {
    let now = ts("2026-12-01T23:00:00Z");
    let one_off = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-02T01:00:00Z",
                         "drain": true, "message": "node upgrade"});
    let drained = json!({"active": true, "workspacesRemaining": 0, "observedGeneration": null,
        "currentOccurrence": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-02T01:00:00Z"},
        "conditions": [{"type": "Drained", "status": "True", "reason": "Drained", "message": "",
                        "lastTransitionTime": "2026-12-01T22:01:00Z"}]});
    let weekly = json!({"schedule": "0 22 * * 6", "duration": "2h"});
    let cases: [(_, [&str; 9]); 5] = [
        (
            window(one_off.clone(), drained),
            [
                "up",
                "yes",
                "2026-12-02T01:00:00Z (in 2h)",
                "-",
                "yes",
                "Enforce",
                "0 (drained)",
                "-",
                "node upgrade",
            ],
        ),
        (
            window(one_off.clone(), json!({"workspacesRemaining": 3})),
            [
                "up",
                "yes",
                "2026-12-02T01:00:00Z (in 2h)",
                "-",
                "yes",
                "Enforce",
                "3",
                "-",
                "node upgrade",
            ],
        ),
        // Notice given, the drain 45 minutes away.
        (
            window(
                json!({"start": "2026-12-01T23:45:00Z", "end": "2026-12-02T01:00:00Z",
                       "drain": true, "notice": "1h", "message": "node upgrade"}),
                json!({"workspacesNotified": 4}),
            ),
            [
                "up",
                "no",
                "-",
                "2026-12-01T23:45:00Z (in 45m)",
                "yes (1h notice)",
                "Enforce",
                "-",
                "4",
                "node upgrade",
            ],
        ),
        // 2026-12-01 is a Tuesday: the next Saturday 22:00 is 3d23h away.
        (
            window(weekly.clone(), Value::Null),
            [
                "up",
                "no",
                "-",
                "2026-12-05T22:00:00Z (in 3d23h)",
                "no",
                "Enforce",
                "-",
                "-",
                "-",
            ],
        ),
        (
            window(
                json!({"schedule": "0 22 * * 6", "duration": "2h", "suspend": true}),
                Value::Null,
            ),
            ["up", "suspended", "-", "-", "no", "Enforce", "-", "-", "-"],
        ),
    ];
    for (w, want) in cases {
        let row = window_row(&w, now);
        assert_eq!(row.cells(), want.map(String::from).to_vec(), "{:?}", w.spec);
    }
    let invalid = window_row(&window(json!({"start": "later"}), Value::Null), now).cells();
    assert_eq!(invalid[1], "invalid");
    assert!(
        invalid[8].starts_with("spec.start: \"later\" is not an RFC 3339 time"),
        "{invalid:?}"
    );
}

#[test]
fn next_occurrences_in_the_window_zone() {
    // Berlin falls back on 2026-10-25 (03:00 CEST -> 02:00 CET): the daily 02:30 start
    // happens once, at the first 02:30, and the 2h window ends two real hours later.
    let w = window(
        json!({"schedule": "30 2 * * *", "duration": "2h", "timeZone": "Europe/Berlin"}),
        Value::Null,
    );
    let rows = occurrences(&w, ts("2026-10-24T00:00:00Z"), 3).expect("valid");
    let cells: Vec<Vec<String>> = rows.iter().map(Tabular::cells).collect();
    let want = [
        [
            "up",
            "2026-10-24 02:30 CEST",
            "2026-10-24 04:30 CEST",
            "in 30m",
        ],
        [
            "up",
            "2026-10-25 02:30 CEST",
            "2026-10-25 03:30 CET",
            "in 24h",
        ],
        [
            "up",
            "2026-10-26 02:30 CET",
            "2026-10-26 04:30 CET",
            "in 2d1h",
        ],
    ];
    assert_eq!(cells, want.map(|r| r.map(String::from).to_vec()).to_vec());
    assert_eq!(rows[1].start, "2026-10-25T00:30:00Z");

    // In force at --at: listed first, then the requested number of upcoming ones.
    let during = occurrences(
        &w,
        ts("2026-10-24T01:00:00Z") + jiff::SignedDuration::from_hours(1),
        1,
    )
    .expect("valid");
    assert_eq!(
        during
            .iter()
            .map(|r| (r.start.as_str(), r.in_force))
            .collect::<Vec<_>>(),
        [
            ("2026-10-24T00:30:00Z", true),
            ("2026-10-25T00:30:00Z", false)
        ]
    );

    let once = window(
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-02T00:00:00Z"}),
        Value::Null,
    );
    assert_eq!(
        occurrences(&once, ts("2026-12-02T00:00:00Z"), 5).expect("valid"),
        []
    );
    assert!(
        occurrences(
            &window(json!({}), Value::Null),
            ts("2026-12-02T00:00:00Z"),
            5
        )
        .is_err()
    );
}

#[test]
fn next_lists_skipped_occurrences_with_their_reason_and_status_shows_the_mode() {
    let w = window(
        json!({"schedule": "0 22 * * *", "duration": "2h", "enforcement": "DryRun",
               "exclusions": [{"start": "2026-12-24", "end": "2026-12-24", "reason": "Christmas"}]}),
        json!({"dryRun": {"wouldDrain": 7}}),
    );
    let rows = occurrences(&w, ts("2026-12-24T12:00:00Z"), 1).expect("valid");
    let skipped: Vec<(String, bool, Option<String>)> = rows
        .iter()
        .map(|r| (r.start.clone(), r.skipped, r.skip_reason.clone()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            (
                "2026-12-24T22:00:00Z".into(),
                true,
                Some("Christmas".into())
            ),
            ("2026-12-25T22:00:00Z".into(), false, None),
        ]
    );
    assert_eq!(rows[0].cells()[3], "skipped: Christmas");
    let row = window_row(&w, ts("2026-12-24T12:00:00Z"));
    assert_eq!(row.next_start.as_deref(), Some("2026-12-25T22:00:00Z"));
    assert_eq!(row.skipped.len(), 1);
    let cells = row.cells();
    assert_eq!(cells[5], "DryRun");
    assert_eq!(cells[6], "7 (would drain)");
}

#[test]
fn next_shows_the_overlapping_occurrence_in_force_beside_the_skipped_one() {
    let w = window(
        json!({"schedule": "0 22 * * *", "duration": "36h",
               "exclusions": [{"start": "2026-12-25T12:00:00Z", "end": "2026-12-25T13:00:00Z",
                               "reason": "later only"}]}),
        json!({}),
    );
    let rows = occurrences(&w, ts("2026-12-24T23:00:00Z"), 1).expect("valid");
    let got: Vec<(String, bool, bool)> = rows
        .iter()
        .map(|r| (r.start.clone(), r.in_force, r.skipped))
        .collect();
    assert_eq!(
        got,
        vec![
            ("2026-12-23T22:00:00Z".into(), true, false),
            ("2026-12-24T22:00:00Z".into(), false, true),
            ("2026-12-25T22:00:00Z".into(), false, false),
        ]
    );
    assert_eq!(rows[1].cells()[3], "skipped: later only");
}

#[test]
fn status_says_which_gate_holds_the_drain_and_since_when() {
    let now = ts("2026-12-01T22:30:00Z");
    let spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
        "drain": true, "maxHold": "20m",
        "holdWhile": {"pods": {"selector": {"matchLabels": {"app": "backup"}}}}});
    let hold = |expired: bool| {
        json!({"workspacesRemaining": 3, "hold": {"gate": "pods",
            "since": "2026-12-01T22:20:00Z", "message": "pod a/backup (app=backup) is Running",
            "expired": expired}})
    };
    let held = window_row(&window(spec.clone(), hold(false)), now);
    assert_eq!(held.cells()[6], "3 (held: pods)");
    let line = held.hold.as_ref().expect("hold").line(now);
    assert!(
        line.starts_with("held: by the pods gate since 2026-12-01T22:20:00Z (")
            && line.contains("pod a/backup"),
        "{line}"
    );
    let expired = window_row(&window(spec, hold(true)), now);
    assert_eq!(expired.cells()[6], "3");
    let line = expired.hold.as_ref().expect("hold").line(now);
    assert!(line.contains("for maxHold; the drain proceeds"), "{line}");
}

#[test]
fn status_counts_the_workspaces_whose_owners_postponed_their_stop() {
    let now = ts("2026-12-01T22:10:00Z");
    let spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
        "drain": true, "maxPostpone": "30m"});
    let status = |postponed: Value| json!({"workspacesRemaining": 3, "workspacesDrained": 1, "workspacesPostponed": postponed});
    let row = window_row(&window(spec.clone(), status(json!(2))), now);
    assert_eq!(row.cells()[6], "3 (2 postponed)");
    let row = window_row(&window(spec, status(Value::Null)), now);
    assert_eq!(row.cells()[6], "3");
}

#[test]
fn status_counts_the_drained_workspaces_starting_again() {
    let after = ts("2026-12-01T23:00:10Z");
    let spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
        "drain": true, "resumeAfter": true});
    let row = window_row(
        &window(spec.clone(), json!({"workspacesResuming": 4})),
        after,
    );
    assert_eq!(row.cells()[6], "4 resuming");
    let row = window_row(&window(spec, json!({})), after);
    assert_eq!(row.cells()[6], "-");
}
