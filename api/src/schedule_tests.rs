//! Table-driven tests of schedule evaluation: one-off windows, recurring windows across
//! midnight and month ends, and both daylight-saving cases.

use jiff::Timestamp;

use crate::maintenance::MaintenanceWindowSpec;
use crate::schedule::Schedule;

fn recurring(cron: &str, duration: &str, zone: &str) -> Schedule {
    MaintenanceWindowSpec {
        schedule: Some(cron.into()),
        duration: Some(duration.into()),
        time_zone: Some(zone.into()),
        ..Default::default()
    }
    .schedule()
    .unwrap_or_else(|e| panic!("{cron} / {duration} / {zone}: {e}"))
}

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// (what, schedule, at, expected (start, end) of the active occurrence or None)
type ActiveCase = (
    &'static str,
    Schedule,
    &'static str,
    Option<(&'static str, &'static str)>,
);

#[test]
fn active_at() {
    let one_off = MaintenanceWindowSpec {
        start: Some("2026-12-01T22:00:00Z".into()),
        end: Some("2026-12-01T23:00:00+00:00".into()),
        ..Default::default()
    }
    .schedule()
    .expect("valid");
    let nightly = || recurring("0 22 * * *", "4h", "UTC");
    let month_end = || recurring("0 22 L * *", "4h", "UTC");
    let saturday_berlin = || recurring("30 2 * * 6", "2h", "Europe/Berlin");
    let cases: Vec<ActiveCase> = vec![
        (
            "one-off, before",
            one_off.clone(),
            "2026-12-01T21:59:59Z",
            None,
        ),
        (
            "one-off, at start (inclusive)",
            one_off.clone(),
            "2026-12-01T22:00:00Z",
            Some(("2026-12-01T22:00:00Z", "2026-12-01T23:00:00Z")),
        ),
        (
            "one-off, inside",
            one_off.clone(),
            "2026-12-01T22:30:00Z",
            Some(("2026-12-01T22:00:00Z", "2026-12-01T23:00:00Z")),
        ),
        (
            "one-off, at end (exclusive)",
            one_off.clone(),
            "2026-12-01T23:00:00Z",
            None,
        ),
        (
            "nightly, spans midnight",
            nightly(),
            "2026-03-15T01:00:00Z",
            Some(("2026-03-14T22:00:00Z", "2026-03-15T02:00:00Z")),
        ),
        (
            "nightly, after it closed",
            nightly(),
            "2026-03-15T02:00:00Z",
            None,
        ),
        (
            "nightly, just opened",
            nightly(),
            "2026-03-15T22:00:00Z",
            Some(("2026-03-15T22:00:00Z", "2026-03-16T02:00:00Z")),
        ),
        (
            "last day of January spills into February",
            month_end(),
            "2026-02-01T01:30:00Z",
            Some(("2026-01-31T22:00:00Z", "2026-02-01T02:00:00Z")),
        ),
        (
            "leap-year February ends on the 29th",
            month_end(),
            "2028-03-01T00:30:00Z",
            Some(("2028-02-29T22:00:00Z", "2028-03-01T02:00:00Z")),
        ),
        (
            "not on the 28th of a leap February",
            month_end(),
            "2028-02-28T23:00:00Z",
            None,
        ),
        (
            "day 31 is skipped in 30-day April",
            recurring("0 22 31 * *", "4h", "UTC"),
            "2026-05-01T01:00:00Z",
            None,
        ),
        (
            "day 31 of March, across the month end",
            recurring("0 22 31 * *", "4h", "UTC"),
            "2026-04-01T01:00:00Z",
            Some(("2026-03-31T22:00:00Z", "2026-04-01T02:00:00Z")),
        ),
        (
            "Saturday in Berlin winter (UTC+1)",
            saturday_berlin(),
            "2026-01-10T02:00:00Z",
            Some(("2026-01-10T01:30:00Z", "2026-01-10T03:30:00Z")),
        ),
        (
            "Saturday in Berlin summer (UTC+2)",
            saturday_berlin(),
            "2026-07-11T01:00:00Z",
            Some(("2026-07-11T00:30:00Z", "2026-07-11T02:30:00Z")),
        ),
        (
            "Sunday is not Saturday",
            saturday_berlin(),
            "2026-07-12T01:00:00Z",
            None,
        ),
        // 2026-03-08: New York jumps from 02:00 EST to 03:00 EDT; 02:30 does not exist.
        (
            "spring forward: 02:30 starts at 03:00 EDT",
            recurring("30 2 * * *", "1h", "America/New_York"),
            "2026-03-08T07:10:00Z",
            Some(("2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z")),
        ),
        (
            "spring forward: not before the jump",
            recurring("30 2 * * *", "1h", "America/New_York"),
            "2026-03-08T06:59:59Z",
            None,
        ),
        // 2026-11-01: New York goes back from 02:00 EDT to 01:00 EST; 01:30 exists twice.
        (
            "fall back: 01:30 starts at the first 01:30 (EDT)",
            recurring("30 1 * * *", "30m", "America/New_York"),
            "2026-11-01T05:45:00Z",
            Some(("2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z")),
        ),
        (
            "fall back: not again at the second 01:30 (EST)",
            recurring("30 1 * * *", "30m", "America/New_York"),
            "2026-11-01T06:45:00Z",
            None,
        ),
        (
            "fall back: duration is elapsed time",
            recurring("30 1 * * *", "2h", "America/New_York"),
            "2026-11-01T07:15:00Z",
            Some(("2026-11-01T05:30:00Z", "2026-11-01T07:30:00Z")),
        ),
        // 2026-03-29: Berlin jumps from 02:00 CET to 03:00 CEST.
        (
            "Berlin, the Saturday before the jump: not yet open",
            saturday_berlin(),
            "2026-03-28T01:15:00Z",
            None,
        ),
        (
            "Berlin spring forward on its Sunday",
            recurring("30 2 * * 0", "2h", "Europe/Berlin"),
            "2026-03-29T01:10:00Z",
            Some(("2026-03-29T01:00:00Z", "2026-03-29T03:00:00Z")),
        ),
        // Starts on the first minute of a gap: the jump is that very instant, and the
        // search for it must not land on the previous transition.
        (
            "New York 02:00 on the jump day: the 8 March occurrence is in force",
            recurring("0 2 * * *", "26h", "America/New_York"),
            "2026-03-08T07:30:00Z",
            Some(("2026-03-08T07:00:00Z", "2026-03-09T09:00:00Z")),
        ),
        (
            "New York 02:00 with 26h: just before the jump the 7 March one is in force",
            recurring("0 2 * * *", "26h", "America/New_York"),
            "2026-03-08T06:59:00Z",
            Some(("2026-03-07T07:00:00Z", "2026-03-08T09:00:00Z")),
        ),
        (
            "Berlin 02:00 on its jump Sunday",
            recurring("0 2 * * 0", "1h", "Europe/Berlin"),
            "2026-03-29T01:30:00Z",
            Some(("2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z")),
        ),
        (
            "London 01:00 on its jump day",
            recurring("0 1 * * *", "30m", "Europe/London"),
            "2026-03-29T01:10:00Z",
            Some(("2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z")),
        ),
        (
            "Santiago midnight on its jump day (southern spring, 00:00 -> 01:00)",
            recurring("0 0 * * *", "2h", "America/Santiago"),
            "2026-09-06T05:00:00Z",
            Some(("2026-09-06T04:00:00Z", "2026-09-06T06:00:00Z")),
        ),
        (
            "Lord Howe (a 30-minute shift) 02:15 starts at the jump to 02:30",
            recurring("15 2 * * *", "1h", "Australia/Lord_Howe"),
            "2026-10-03T15:40:00Z",
            Some(("2026-10-03T15:30:00Z", "2026-10-03T16:30:00Z")),
        ),
        (
            "Lord Howe fall back (02:00 -> 01:30): 01:45 once, in the first pass",
            recurring("45 1 * * *", "10m", "Australia/Lord_Howe"),
            "2026-04-04T15:20:00Z",
            None,
        ),
    ];
    for (what, schedule, at, expected) in cases {
        let got = schedule.active_at(ts(at)).map(|o| (o.start, o.end));
        let expected = expected.map(|(s, e)| (ts(s), ts(e)));
        assert_eq!(got, expected, "{what} at {at}");
    }
}

#[test]
fn next_after() {
    let cases: Vec<(&str, Schedule, &str, Vec<&str>)> = vec![
        (
            "weekly Saturday 22:00 Berlin",
            recurring("0 22 * * 6", "4h", "Europe/Berlin"),
            "2026-10-20T00:00:00Z",
            vec![
                "2026-10-24T20:00:00Z",
                "2026-10-31T21:00:00Z",
                "2026-11-07T21:00:00Z",
            ],
        ),
        (
            "spring forward: one occurrence per day, 02:30 -> 03:00",
            recurring("30 2 * * *", "1h", "America/New_York"),
            "2026-03-07T00:00:00Z",
            vec![
                "2026-03-07T07:30:00Z",
                "2026-03-08T07:00:00Z",
                "2026-03-09T06:30:00Z",
            ],
        ),
        (
            "fall back: 01:30 once",
            recurring("30 1 * * *", "30m", "America/New_York"),
            "2026-10-31T00:00:00Z",
            vec![
                "2026-10-31T05:30:00Z",
                "2026-11-01T05:30:00Z",
                "2026-11-02T06:30:00Z",
            ],
        ),
        (
            "every 30 minutes across the spring jump: no duplicates",
            recurring("*/30 * * * *", "10m", "America/New_York"),
            "2026-03-08T06:15:00Z",
            vec![
                "2026-03-08T06:30:00Z",
                "2026-03-08T07:00:00Z",
                "2026-03-08T07:30:00Z",
            ],
        ),
        (
            "every 30 minutes across the fall-back: wall times once",
            recurring("*/30 * * * *", "10m", "America/New_York"),
            "2026-11-01T05:15:00Z",
            vec![
                "2026-11-01T05:30:00Z",
                "2026-11-01T07:00:00Z",
                "2026-11-01T07:30:00Z",
            ],
        ),
        (
            "last day of month",
            recurring("0 22 L * *", "4h", "UTC"),
            "2028-01-31T23:00:00Z",
            vec![
                "2028-02-29T22:00:00Z",
                "2028-03-31T22:00:00Z",
                "2028-04-30T22:00:00Z",
            ],
        ),
        (
            "*/2 is restricted: odd days OR Saturdays (Kubernetes CronJob)",
            recurring("0 2 */2 * 6", "1h", "UTC"),
            "2026-06-01T12:00:00Z",
            vec![
                "2026-06-03T02:00:00Z",
                "2026-06-05T02:00:00Z",
                "2026-06-06T02:00:00Z",
                "2026-06-07T02:00:00Z",
                "2026-06-09T02:00:00Z",
            ],
        ),
        (
            "unrestricted day-of-month: Saturdays only",
            recurring("0 2 * * 6", "1h", "UTC"),
            "2026-06-01T12:00:00Z",
            vec![
                "2026-06-06T02:00:00Z",
                "2026-06-13T02:00:00Z",
                "2026-06-20T02:00:00Z",
            ],
        ),
        (
            "? is unrestricted: Saturdays only",
            recurring("0 2 ? * 6", "1h", "UTC"),
            "2026-06-01T12:00:00Z",
            vec!["2026-06-06T02:00:00Z", "2026-06-13T02:00:00Z"],
        ),
        (
            "*/1 is unrestricted: Saturdays only",
            recurring("0 2 */1 * 6", "1h", "UTC"),
            "2026-06-01T12:00:00Z",
            vec!["2026-06-06T02:00:00Z", "2026-06-13T02:00:00Z"],
        ),
        (
            "a list holding * is unrestricted: Saturdays only",
            recurring("0 2 *,15 * 6", "1h", "UTC"),
            "2026-06-01T12:00:00Z",
            vec!["2026-06-06T02:00:00Z", "2026-06-13T02:00:00Z"],
        ),
        (
            "unrestricted day-of-week: odd days only",
            recurring("0 2 */2 * *", "1h", "UTC"),
            "2026-06-01T12:00:00Z",
            vec![
                "2026-06-03T02:00:00Z",
                "2026-06-05T02:00:00Z",
                "2026-06-07T02:00:00Z",
            ],
        ),
        (
            "the 1st only",
            recurring("0 2 1 * *", "1h", "UTC"),
            "2026-06-01T12:00:00Z",
            vec![
                "2026-07-01T02:00:00Z",
                "2026-08-01T02:00:00Z",
                "2026-09-01T02:00:00Z",
            ],
        ),
        (
            "the 1st OR Mondays",
            recurring("0 2 1 * 1", "1h", "UTC"),
            "2026-06-20T12:00:00Z",
            vec![
                "2026-06-22T02:00:00Z",
                "2026-06-29T02:00:00Z",
                "2026-07-01T02:00:00Z",
                "2026-07-06T02:00:00Z",
            ],
        ),
        // The jump's first minute (the defect: these days had no occurrence).
        (
            "Berlin 0 2 * * 0: 29 March starts at the jump",
            recurring("0 2 * * 0", "1h", "Europe/Berlin"),
            "2026-03-22T12:00:00Z",
            vec!["2026-03-29T01:00:00Z", "2026-04-05T00:00:00Z"],
        ),
        (
            "London 0 1 * * * (gap at 01:00)",
            recurring("0 1 * * *", "30m", "Europe/London"),
            "2026-03-28T12:00:00Z",
            vec!["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"],
        ),
        (
            "Santiago 0 0 * * * (gap at 00:00, southern hemisphere)",
            recurring("0 0 * * *", "1h", "America/Santiago"),
            "2026-09-04T12:00:00Z",
            vec![
                "2026-09-05T04:00:00Z",
                "2026-09-06T04:00:00Z",
                "2026-09-07T03:00:00Z",
            ],
        ),
        (
            "New York 0 2 * * * (gap at 02:00)",
            recurring("0 2 * * *", "26h", "America/New_York"),
            "2026-03-07T12:00:00Z",
            vec!["2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"],
        ),
        (
            "Lord Howe 0 2 and 15 2 collapse onto the 30-minute jump",
            recurring("0,15 2 * * *", "10m", "Australia/Lord_Howe"),
            "2026-10-02T12:00:00Z",
            vec![
                "2026-10-02T15:30:00Z",
                "2026-10-02T15:45:00Z",
                "2026-10-03T15:30:00Z",
                "2026-10-04T15:00:00Z",
            ],
        ),
        (
            "Lord Howe fall back: 01:45 once",
            recurring("45 1 * * *", "10m", "Australia/Lord_Howe"),
            "2026-04-03T12:00:00Z",
            vec![
                "2026-04-03T14:45:00Z",
                "2026-04-04T14:45:00Z",
                "2026-04-05T15:15:00Z",
            ],
        ),
        (
            "Santiago fall back (24:00 -> 23:00): 23:30 once, in the first pass",
            recurring("30 23 * * *", "10m", "America/Santiago"),
            "2026-04-03T12:00:00Z",
            vec![
                "2026-04-04T02:30:00Z",
                "2026-04-05T02:30:00Z",
                "2026-04-06T03:30:00Z",
            ],
        ),
        (
            "a macro: @weekly in Berlin",
            recurring("@weekly", "1h", "Europe/Berlin"),
            "2026-03-22T12:00:00Z",
            vec!["2026-03-28T23:00:00Z", "2026-04-04T22:00:00Z"],
        ),
        (
            "29 February, eight years apart across 2100",
            recurring("0 0 29 2 *", "1h", "UTC"),
            "2096-03-01T00:00:00Z",
            vec!["2104-02-29T00:00:00Z"],
        ),
        (
            "day-of-month OR day-of-week",
            recurring("0 0 1 * 1", "1h", "UTC"),
            "2026-05-30T00:00:00Z",
            vec![
                "2026-06-01T00:00:00Z",
                "2026-06-08T00:00:00Z",
                "2026-06-15T00:00:00Z",
            ],
        ),
    ];
    for (what, schedule, after, expected) in cases {
        let got: Vec<Timestamp> = schedule
            .next_after(ts(after), expected.len())
            .iter()
            .map(|o| o.start)
            .collect();
        let expected: Vec<Timestamp> = expected.into_iter().map(ts).collect();
        assert_eq!(got, expected, "{what}");
    }
}

#[test]
fn one_off_has_at_most_one_future_occurrence() {
    let schedule = MaintenanceWindowSpec {
        start: Some("2026-12-01T22:00:00Z".into()),
        end: Some("2026-12-01T23:00:00Z".into()),
        ..Default::default()
    }
    .schedule()
    .expect("valid");
    assert_eq!(schedule.next_after(ts("2026-11-01T00:00:00Z"), 3).len(), 1);
    assert!(
        schedule
            .next_after(ts("2026-12-01T22:00:00Z"), 3)
            .is_empty()
    );
    assert_eq!(
        schedule.next_change(ts("2026-12-01T22:10:00Z")),
        Some(ts("2026-12-01T23:00:00Z"))
    );
    assert_eq!(
        schedule.next_change(ts("2026-11-01T00:00:00Z")),
        Some(ts("2026-12-01T22:00:00Z"))
    );
}
