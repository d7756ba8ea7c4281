//! Table tests of exclusions: which occurrences they skip (daylight-saving days included),
//! the exclusion `maintenance skip` writes, and the validation messages.

use jiff::Timestamp;
use jiff::civil::Date;
use serde_json::json;

use crate::exclusion::{self, Exclusions};
use crate::maintenance::MaintenanceWindowSpec;
use crate::schedule::Occurrence;
use crate::validation::validate_maintenance_window;

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn spec(value: serde_json::Value) -> MaintenanceWindowSpec {
    serde_json::from_value(value).expect("spec literal")
}

/// A recurring spec with these exclusions, each `(start, end, reason)`.
fn window(
    cron: &str,
    duration: &str,
    zone: &str,
    exclusions: &[(&str, &str, &str)],
) -> MaintenanceWindowSpec {
    let exclusions: Vec<_> = exclusions
        .iter()
        .map(|(start, end, reason)| json!({"start": start, "end": end, "reason": reason}))
        .collect();
    spec(
        json!({"schedule": cron, "duration": duration, "timeZone": zone, "exclusions": exclusions}),
    )
}

fn occurrence(start: &str, end: &str) -> Occurrence {
    Occurrence {
        start: ts(start),
        end: ts(end),
    }
}

/// (what, window, at, the occurrence in force with exclusions applied)
type ActiveCase = (
    &'static str,
    MaintenanceWindowSpec,
    &'static str,
    Option<(&'static str, &'static str)>,
);

#[test]
fn an_occurrence_overlapping_an_exclusion_does_not_happen() {
    let nightly = |x: &[(&str, &str, &str)]| window("0 22 * * *", "4h", "UTC", x);
    let cases: Vec<ActiveCase> = vec![
        (
            "no exclusion",
            nightly(&[]),
            "2026-12-24T23:00:00Z",
            Some(("2026-12-24T22:00:00Z", "2026-12-25T02:00:00Z")),
        ),
        (
            "a date excludes the occurrence starting that day",
            nightly(&[("2026-12-24", "2026-12-24", "Christmas")]),
            "2026-12-24T23:00:00Z",
            None,
        ),
        (
            "the whole occurrence is skipped, also past the exclusion's end",
            nightly(&[("2026-12-24", "2026-12-24", "Christmas")]),
            "2026-12-25T01:00:00Z",
            None,
        ),
        (
            "an exclusion overlapping only the occurrence's last second skips it",
            nightly(&[("2026-12-25T01:59:59Z", "2026-12-25T12:00:00Z", "late")]),
            "2026-12-24T22:00:00Z",
            None,
        ),
        (
            "an exclusion ending at the start (exclusive) skips nothing",
            nightly(&[("2026-12-24T12:00:00Z", "2026-12-24T22:00:00Z", "before")]),
            "2026-12-24T22:00:00Z",
            Some(("2026-12-24T22:00:00Z", "2026-12-25T02:00:00Z")),
        ),
        (
            "an exclusion starting at the end skips nothing",
            nightly(&[("2026-12-25T02:00:00Z", "2026-12-25T03:00:00Z", "after")]),
            "2026-12-25T01:00:00Z",
            Some(("2026-12-24T22:00:00Z", "2026-12-25T02:00:00Z")),
        ),
        (
            "the next night still happens",
            nightly(&[("2026-12-24", "2026-12-24", "Christmas")]),
            "2026-12-25T23:00:00Z",
            Some(("2026-12-25T22:00:00Z", "2026-12-26T02:00:00Z")),
        ),
        (
            "Europe/Berlin: the date starts at local midnight (23:00Z), so the 23:30 of the day before runs into it and is skipped",
            window(
                "30 23 * * *",
                "1h",
                "Europe/Berlin",
                &[("2026-12-24", "2026-12-24", "x")],
            ),
            "2026-12-23T22:45:00Z",
            None,
        ),
        (
            "Europe/Berlin: two days before is untouched",
            window(
                "30 23 * * *",
                "1h",
                "Europe/Berlin",
                &[("2026-12-24", "2026-12-24", "x")],
            ),
            "2026-12-22T22:45:00Z",
            Some(("2026-12-22T22:30:00Z", "2026-12-22T23:30:00Z")),
        ),
        (
            "New York, fall-back day: the date is 25 hours, its 01:30 EDT occurrence skipped",
            window(
                "30 1 * * *",
                "1h",
                "America/New_York",
                &[("2026-11-01", "2026-11-01", "x")],
            ),
            "2026-11-01T05:45:00Z",
            None,
        ),
        (
            "New York, fall-back day: the next day's occurrence happens",
            window(
                "30 1 * * *",
                "1h",
                "America/New_York",
                &[("2026-11-01", "2026-11-01", "x")],
            ),
            "2026-11-02T06:45:00Z",
            Some(("2026-11-02T06:30:00Z", "2026-11-02T07:30:00Z")),
        ),
        (
            "New York, spring-forward day: the occurrence moved to the jump is skipped",
            window(
                "30 2 * * *",
                "1h",
                "America/New_York",
                &[("2026-03-08", "2026-03-08", "x")],
            ),
            "2026-03-08T07:30:00Z",
            None,
        ),
        (
            "Berlin, spring-forward day: a 23-hour date still skips the 02:00 occurrence",
            window(
                "0 2 * * 0",
                "2h",
                "Europe/Berlin",
                &[("2026-03-29", "2026-03-29", "x")],
            ),
            "2026-03-29T01:30:00Z",
            None,
        ),
        // Occurrences that overlap each other (a 36 h window every night): an instant is in
        // force while any occurrence containing it is not skipped.
        (
            "overlapping: the earlier occurrence still holds while the later, skipped one runs",
            window(
                "0 22 * * *",
                "36h",
                "UTC",
                &[("2026-12-25T12:00:00Z", "2026-12-25T13:00:00Z", "later only")],
            ),
            "2026-12-24T23:00:00Z",
            Some(("2026-12-23T22:00:00Z", "2026-12-25T10:00:00Z")),
        ),
        (
            "overlapping: once the earlier one ends, only the skipped one is left",
            window(
                "0 22 * * *",
                "36h",
                "UTC",
                &[("2026-12-25T12:00:00Z", "2026-12-25T13:00:00Z", "later only")],
            ),
            "2026-12-25T11:00:00Z",
            None,
        ),
        (
            "overlapping: the next one, not skipped, holds while the skipped one runs on",
            window(
                "0 22 * * *",
                "36h",
                "UTC",
                &[("2026-12-25T12:00:00Z", "2026-12-25T13:00:00Z", "later only")],
            ),
            "2026-12-26T09:00:00Z",
            Some(("2026-12-25T22:00:00Z", "2026-12-27T10:00:00Z")),
        ),
        (
            "overlapping: the earlier one skipped, the later one in force",
            window(
                "0 22 * * *",
                "36h",
                "UTC",
                &[(
                    "2026-12-24T11:00:00Z",
                    "2026-12-24T12:00:00Z",
                    "earlier only",
                )],
            ),
            "2026-12-24T23:00:00Z",
            Some(("2026-12-24T22:00:00Z", "2026-12-26T10:00:00Z")),
        ),
        (
            "overlapping: every occurrence containing the instant skipped",
            window(
                "0 22 * * *",
                "36h",
                "UTC",
                &[("2026-12-24", "2026-12-24", "both")],
            ),
            "2026-12-24T23:00:00Z",
            None,
        ),
        (
            "overlapping, none skipped: the latest start is the one in force",
            window("0 22 * * *", "36h", "UTC", &[]),
            "2026-12-24T23:00:00Z",
            Some(("2026-12-24T22:00:00Z", "2026-12-26T10:00:00Z")),
        ),
        (
            "hourly for 3 h: the two later ones skipped, the 10:00 one holds",
            window(
                "0 * * * *",
                "3h",
                "UTC",
                &[("2026-12-24T13:30:00Z", "2026-12-24T13:40:00Z", "x")],
            ),
            "2026-12-24T12:30:00Z",
            Some(("2026-12-24T10:00:00Z", "2026-12-24T13:00:00Z")),
        ),
        (
            "hourly for 3 h: two exclusions skip all three",
            window(
                "0 * * * *",
                "3h",
                "UTC",
                &[
                    ("2026-12-24T13:30:00Z", "2026-12-24T13:40:00Z", "x"),
                    ("2026-12-24T12:50:00Z", "2026-12-24T12:55:00Z", "y"),
                ],
            ),
            "2026-12-24T12:30:00Z",
            None,
        ),
    ];
    for (what, spec, at, expected) in cases {
        let schedule = spec.schedule().unwrap_or_else(|e| panic!("{what}: {e}"));
        let exclusions = spec.exclusions().unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = exclusions.active_at(&schedule, ts(at));
        let expected = expected.map(|(s, e)| occurrence(s, e));
        assert_eq!(got, expected, "{what}");
    }
}

#[test]
fn upcoming_lists_skipped_occurrences_with_their_reason_until_one_happens() {
    let spec = window(
        "0 22 * * *",
        "4h",
        "UTC",
        &[
            ("2026-12-24", "2026-12-25", "Christmas"),
            ("2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z", "New Year"),
        ],
    );
    let schedule = spec.schedule().expect("valid");
    let exclusions = spec.exclusions().expect("valid");
    let rows: Vec<(String, Option<String>)> = exclusions
        .upcoming(&schedule, ts("2026-12-23T23:00:00Z"), 2)
        .into_iter()
        .map(|u| {
            (
                u.occurrence.start.to_string(),
                u.skipped_by.and_then(|e| e.reason),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("2026-12-24T22:00:00Z".into(), Some("Christmas".into())),
            ("2026-12-25T22:00:00Z".into(), Some("Christmas".into())),
            ("2026-12-26T22:00:00Z".into(), None),
            ("2026-12-27T22:00:00Z".into(), None),
        ]
    );
    let next = exclusions.next_after(&schedule, ts("2026-12-23T23:00:00Z"), 1);
    assert_eq!(
        next,
        vec![occurrence("2026-12-26T22:00:00Z", "2026-12-27T02:00:00Z")]
    );
    // In the middle of a skipped occurrence the status lists it, then the next skipped.
    let skipped = exclusions.skipped_until_next(&schedule, ts("2026-12-24T23:00:00Z"), 10);
    let starts: Vec<String> = skipped
        .iter()
        .map(|u| u.occurrence.start.to_string())
        .collect();
    assert_eq!(starts, vec!["2026-12-24T22:00:00Z", "2026-12-25T22:00:00Z"]);
}

#[test]
fn a_long_exclusion_of_an_hourly_window_is_searched_past() {
    let spec = window(
        "0 * * * *",
        "30m",
        "UTC",
        &[("2026-12-01", "2026-12-10", "freeze")],
    );
    let schedule = spec.schedule().expect("valid");
    let exclusions = spec.exclusions().expect("valid");
    let next = exclusions.next_after(&schedule, ts("2026-11-30T23:30:00Z"), 1);
    assert_eq!(
        next,
        vec![occurrence("2026-12-11T00:00:00Z", "2026-12-11T00:30:00Z")]
    );
}

/// (what, window (cron, duration, zone), day, expected occurrence or error fragment)
type SkipCase = (
    &'static str,
    (&'static str, &'static str, &'static str),
    &'static str,
    Result<(&'static str, &'static str), &'static str>,
);

#[test]
fn skip_on_a_day_covers_exactly_that_occurrence() {
    let cases: Vec<SkipCase> = vec![
        (
            "a plain night",
            ("0 22 * * *", "4h", "UTC"),
            "2026-12-24",
            Ok(("2026-12-24T22:00:00Z", "2026-12-25T02:00:00Z")),
        ),
        (
            "New York gap day: the 02:30 that does not exist starts at the jump, 03:00 EDT",
            ("30 2 * * *", "1h", "America/New_York"),
            "2026-03-08",
            Ok(("2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z")),
        ),
        (
            "New York fold day: the first 01:30 (EDT)",
            ("30 1 * * *", "2h", "America/New_York"),
            "2026-11-01",
            Ok(("2026-11-01T05:30:00Z", "2026-11-01T07:30:00Z")),
        ),
        (
            "Berlin: the day is the zone's, not UTC's (00:30 local is 23:30Z the day before)",
            ("30 0 * * *", "1h", "Europe/Berlin"),
            "2026-12-24",
            Ok(("2026-12-23T23:30:00Z", "2026-12-24T00:30:00Z")),
        ),
        (
            "no occurrence that day",
            ("0 22 * * 6", "4h", "UTC"),
            "2026-12-24",
            Err("no occurrence starts on 2026-12-24"),
        ),
        (
            "two occurrences that day",
            ("0 1,13 * * *", "1h", "UTC"),
            "2026-12-24",
            Err("2 occurrences start on 2026-12-24"),
        ),
        (
            "occurrences overlap each other",
            ("0 22 * * *", "168h", "UTC"),
            "2026-12-24",
            Err("overlap"),
        ),
    ];
    for (what, (cron, duration, zone), day, expected) in cases {
        let spec = window(cron, duration, zone, &[]);
        let schedule = spec.schedule().unwrap_or_else(|e| panic!("{what}: {e}"));
        let day: Date = day.parse().expect("date");
        let got = exclusion::starting_on(&schedule, &spec.zone(), day)
            .and_then(|o| exclusion::covering(&schedule, o, Some("r".into())));
        match (got, expected) {
            (Ok(x), Ok((start, end))) => {
                assert_eq!((x.start, x.end), (ts(start), ts(end)), "{what}");
                // Written back, it skips that occurrence and no other.
                let exclusions = Exclusions::new(vec![x]);
                let before = ts(start)
                    .checked_sub(jiff::SignedDuration::from_hours(48))
                    .expect("t");
                let upcoming = exclusions.upcoming(&schedule, before, 3);
                let skipped: Vec<_> = upcoming.iter().filter(|u| u.skipped_by.is_some()).collect();
                assert_eq!(skipped.len(), 1, "{what}: {upcoming:?}");
                assert_eq!(skipped[0].occurrence.start, ts(start), "{what}");
            }
            (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{what}: {e}"),
            (got, expected) => panic!("{what}: got {got:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn invalid_exclusions_are_refused_field_by_field() {
    let too_many: Vec<_> = (0..51)
        .map(|i| json!({"start": format!("2027-01-{:02}", i % 28 + 1), "end": "2027-02-01"}))
        .collect();
    let cases: Vec<(&str, serde_json::Value, Vec<&str>)> = vec![
        (
            "on a one-off window",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
                   "exclusions": [{"start": "2026-12-01", "end": "2026-12-01"}]}),
            vec!["spec.exclusions", "recurring windows (schedule) only"],
        ),
        (
            "end before start",
            json!({"schedule": "0 22 * * *", "duration": "2h",
                   "exclusions": [{"start": "2026-12-25", "end": "2026-12-24"}]}),
            vec!["spec.exclusions[0].end", "not after start"],
        ),
        (
            "end equal to start (times)",
            json!({"schedule": "0 22 * * *", "duration": "2h",
                   "exclusions": [{"start": "2026-12-25T00:00:00Z", "end": "2026-12-25T00:00:00Z"}]}),
            vec!["spec.exclusions[0].end", "not after start"],
        ),
        (
            "unparseable start",
            json!({"schedule": "0 22 * * *", "duration": "2h",
                   "exclusions": [{"start": "christmas", "end": "2026-12-25"}]}),
            vec![
                "spec.exclusions[0].start",
                "\"christmas\"",
                "RFC 3339",
                "date",
            ],
        ),
        (
            "a time without an offset",
            json!({"schedule": "0 22 * * *", "duration": "2h",
                   "exclusions": [{"start": "2026-12-24", "end": "2026-12-25T10:00:00"}]}),
            vec!["spec.exclusions[0].end", "offset"],
        ),
        (
            "too many",
            json!({"schedule": "0 22 * * *", "duration": "2h", "exclusions": too_many}),
            vec!["spec.exclusions", "51 entries", "at most 50"],
        ),
        (
            "a reason too long",
            json!({"schedule": "0 22 * * *", "duration": "2h",
                   "exclusions": [{"start": "2026-12-24", "end": "2026-12-24", "reason": "x".repeat(300)}]}),
            vec!["spec.exclusions[0].reason", "300 characters", "at most 256"],
        ),
    ];
    for (what, value, fragments) in cases {
        let errors = validate_maintenance_window(&spec(value))
            .expect_err(what)
            .to_string();
        for fragment in fragments {
            assert!(
                errors.contains(fragment),
                "{what}: {errors:?} lacks {fragment:?}"
            );
        }
    }
    let valid = window(
        "0 22 * * *",
        "2h",
        "Europe/Berlin",
        &[
            ("2026-12-24", "2026-12-26", "Christmas"),
            ("2026-12-31T12:00:00+01:00", "2027-01-01T12:00:00+01:00", ""),
        ],
    );
    assert_eq!(validate_maintenance_window(&valid), Ok(()));
}

#[test]
fn the_crd_schema_caps_what_validation_caps() {
    use kube::CustomResourceExt;
    let crd = serde_json::to_value(crate::MaintenanceWindow::crd()).expect("CRD");
    let exclusions = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"]["exclusions"];
    assert_eq!(exclusions["maxItems"], json!(exclusion::MAX_EXCLUSIONS));
    assert_eq!(
        exclusions["items"]["properties"]["reason"]["maxLength"],
        json!(exclusion::MAX_REASON_CHARS)
    );
}

/// (what, exclusions, at, the next instant the occurrence in force may change)
type ChangeCase = (
    &'static str,
    &'static [(&'static str, &'static str, &'static str)],
    &'static str,
    &'static str,
);

#[test]
fn overlapping_occurrences_hand_over_at_the_next_start() {
    let cases: Vec<ChangeCase> = vec![
        (
            "none skipped: the next night's start, before this occurrence's end",
            &[],
            "2026-12-24T23:00:00Z",
            "2026-12-25T22:00:00Z",
        ),
        (
            "the later one skipped: the earlier one's end, while the skipped one runs on",
            &[("2026-12-25T12:00:00Z", "2026-12-25T13:00:00Z", "later only")],
            "2026-12-24T23:00:00Z",
            "2026-12-25T10:00:00Z",
        ),
        (
            "nothing in force: the next start that is not skipped",
            &[("2026-12-25T12:00:00Z", "2026-12-25T13:00:00Z", "later only")],
            "2026-12-25T11:00:00Z",
            "2026-12-25T22:00:00Z",
        ),
    ];
    for (what, exclusions, at, expected) in cases {
        let exclusions: Vec<_> = exclusions
            .iter()
            .map(|(start, end, reason)| json!({"start": start, "end": end, "reason": reason}))
            .collect();
        let w: crate::MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 22 * * *", "duration": "36h", "exclusions": exclusions},
        }))
        .expect("window literal");
        let compiled = crate::window::CompiledWindow::compile(&w).expect("valid window");
        assert_eq!(compiled.next_change(ts(at)), Some(ts(expected)), "{what}");
    }
}
