//! The grammar of Kubernetes CronJob schedules (robfig/cron v3 `ParseStandard`, which the
//! CronJob validation and controller call), row by row from its parser: what it accepts,
//! what each form matches, and what it refuses. Rows marked "stricter" are accepted by
//! CronJob but refused here on purpose; rows marked "extension" are lifeguard's own.

use jiff::civil::{Date, date};

use crate::cron::{CronSpec, Extension};

fn parse(text: &str) -> CronSpec {
    CronSpec::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// The first `n` (hour, minute) pairs of a day.
fn first_times(text: &str, n: usize) -> Vec<(i8, i8)> {
    parse(text).times_of_day().take(n).collect()
}

/// The days of the week of 2026-06-07 (a Sunday) .. 2026-06-13 on which `text` runs.
fn weekdays(text: &str) -> Vec<i8> {
    let spec = parse(text);
    (7..=13)
        .map(|d| date(2026, 6, d))
        .filter(|d| spec.matches_date(*d))
        .map(|d| d.weekday().to_sunday_zero_offset())
        .collect()
}

fn days_of(text: &str, year: i16, month: i8) -> Vec<i8> {
    let spec = parse(text);
    let first = date(year, month, 1);
    (1..=first.days_in_month())
        .map(|d| date(year, month, d))
        .filter(|d: &Date| spec.matches_date(*d))
        .map(|d| d.day())
        .collect()
}

#[test]
fn macros_are_the_fields_they_stand_for() {
    for (name, fields) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        ("  @daily  ", "0 0 * * *"),
    ] {
        assert_eq!(parse(name), parse(fields), "{name}");
    }
    assert_eq!(weekdays("@weekly"), vec![0], "@weekly is Sundays only");
    assert_eq!(days_of("@yearly", 2026, 1), vec![1]);
    assert_eq!(days_of("@yearly", 2026, 2), Vec::<i8>::new());
}

/// (what, schedule, the (hour, minute) pairs of a matching day)
type TimesCase = (&'static str, &'static str, Vec<(i8, i8)>);

#[test]
fn field_forms_match_what_cronjob_matches() {
    let cases: Vec<TimesCase> = vec![
        (
            "a step from a single start runs to the maximum",
            "0/15 3 * * *",
            vec![(3, 0), (3, 15), (3, 30), (3, 45)],
        ),
        (
            "5/15",
            "5/15 3 * * *",
            vec![(3, 5), (3, 20), (3, 35), (3, 50)],
        ),
        (
            "a step over a range",
            "10-40/10 3 * * *",
            vec![(3, 10), (3, 20), (3, 30), (3, 40)],
        ),
        ("*/20", "*/20 1 * * *", vec![(1, 0), (1, 20), (1, 40)]),
        (
            "? in the day fields and month",
            "0 1-3 ? ? ?",
            vec![(1, 0), (2, 0), (3, 0)],
        ),
        (
            "? as the hour",
            "0 ? * * *",
            (0..24).map(|h| (h, 0)).collect(),
        ),
        (
            "a list of ranges",
            "0 1-2,22 * * *",
            vec![(1, 0), (2, 0), (22, 0)],
        ),
        ("leading zeros", "05 07 * * *", vec![(7, 5)]),
        ("tabs separate fields too", "30\t2\t*\t*\t*", vec![(2, 30)]),
        ("hour 23, minute 59", "59 23 * * *", vec![(23, 59)]),
    ];
    for (what, text, expected) in cases {
        // One more than expected: nothing else matches that day.
        assert_eq!(
            first_times(text, expected.len() + 1),
            expected,
            "{what}: {text}"
        );
    }
}

#[test]
fn names_and_steps_on_names() {
    let cases: Vec<(&str, &str, Vec<i8>)> = vec![
        (
            "a step on a name: MON/2 is mon-sat/2",
            "0 0 * * MON/2",
            vec![1, 3, 5],
        ),
        ("names in any case", "0 0 * * sun,Wed,FRI", vec![0, 3, 5]),
        ("a range of names", "0 0 * * mon-fri", vec![1, 2, 3, 4, 5]),
        ("a name and a number", "0 0 * * sun-2", vec![0, 1, 2]),
        ("*/2 over the week", "0 0 * * */2", vec![0, 2, 4, 6]),
        ("? in day-of-week", "0 0 * * ?", vec![0, 1, 2, 3, 4, 5, 6]),
    ];
    for (what, text, expected) in cases {
        assert_eq!(weekdays(text), expected, "{what}: {text}");
    }
    assert_eq!(
        days_of("0 0 1 jan-mar/2 *", 2026, 3),
        vec![1],
        "JAN-MAR/2 has March"
    );
    assert_eq!(days_of("0 0 1 jan-mar/2 *", 2026, 2), Vec::<i8>::new());
    assert_eq!(days_of("0 0 1 Dec *", 2026, 12), vec![1]);
}

/// June 2026 starts on a Monday.
#[test]
fn the_two_day_fields_combine_as_in_cronjob() {
    let cases: Vec<(&str, &str, Vec<i8>)> = vec![
        (
            "both restricted: either",
            "0 0 1,15 * 0",
            vec![1, 7, 14, 15, 21, 28],
        ),
        (
            "*/2 is restricted (no star)",
            "0 0 */2 * 0",
            vec![
                1, 3, 5, 7, 9, 11, 13, 14, 15, 17, 19, 21, 23, 25, 27, 28, 29,
            ],
        ),
        (
            "* in day-of-month: day-of-week alone",
            "0 0 * * 0",
            vec![7, 14, 21, 28],
        ),
        ("? in day-of-month", "0 0 ? * 0", vec![7, 14, 21, 28]),
        ("*/1 keeps the star", "0 0 */1 * 0", vec![7, 14, 21, 28]),
        (
            "a list holding * keeps the star",
            "0 0 *,15 * 0",
            vec![7, 14, 21, 28],
        ),
        ("1/1 is no star: either", "0 0 1/1 * 0", (1..=30).collect()),
        (
            "* in day-of-week: day-of-month alone",
            "0 0 1,15 * *",
            vec![1, 15],
        ),
        ("* in day-of-week with a list", "0 0 1 * *,1", vec![1]),
        ("both *", "0 0 * * *", (1..=30).collect()),
    ];
    for (what, text, expected) in cases {
        assert_eq!(days_of(text, 2026, 6), expected, "{what}: {text}");
    }
}

#[test]
fn last_day_of_month_is_lifeguards_one_extension() {
    assert_eq!(days_of("0 22 L * *", 2028, 2), vec![29]);
    assert_eq!(days_of("0 22 L * *", 2026, 2), vec![28]);
    assert_eq!(days_of("0 22 1,l * *", 2026, 4), vec![1, 30]);
    assert_eq!(
        parse("0 22 L * *").extensions(),
        vec![Extension::LastDayOfMonth]
    );
    assert_eq!(parse("0 22 * * *").extensions(), vec![]);
    assert_eq!(
        Extension::LastDayOfMonth.to_string(),
        "L (last day of the month)"
    );
}

#[test]
fn refused_with_the_reason() {
    let cases: Vec<(&str, &str, &str)> = vec![
        // A * or ? in a list must not hide the rest of the list from the checks.
        (
            "a name in a list with *",
            "* * * * *,b",
            "day-of-week: value \"b\" is not a number",
        ),
        (
            "out of range in a list with *",
            "0 0 *,99 * *",
            "day-of-month: \"99\" goes above the maximum 31",
        ),
        (
            "garbage in a list with */1",
            "0 0 */1,foo * 1",
            "day-of-month: value \"foo\" is not a number",
        ),
        (
            "? with garbage",
            "0 0 ?,x * *",
            "day-of-month: value \"x\" is not a number",
        ),
        // What CronJob refuses.
        (
            "W",
            "0 0 15W * *",
            "W, the nearest weekday, is not Kubernetes CronJob syntax",
        ),
        ("#", "0 0 * * 5#3", "uses #, the nth weekday of a month"),
        ("day-of-week 7", "0 0 * * 7", "7 is not a day of the week"),
        ("a range to 7", "0 0 * * 5-7", "7 is not a day of the week"),
        ("5L", "0 0 * * 5L", "5L, the last weekday of a month"),
        (
            "L outside day-of-month",
            "0 L * * *",
            "L is lifeguard's last-day-of-month extension",
        ),
        (
            "L in a range",
            "0 0 1-L * *",
            "stands alone in a list element",
        ),
        (
            "@every",
            "@every 1h",
            "@every counts from a CronJob's last run",
        ),
        ("an unknown macro", "@reboot", "unknown macro \"@reboot\""),
        (
            "macros are lower case (as in CronJob)",
            "@DAILY",
            "unknown macro",
        ),
        (
            "TZ= in the schedule",
            "TZ=Europe/Berlin 0 0 * * *",
            "set spec.timeZone",
        ),
        (
            "CRON_TZ= in the schedule",
            "CRON_TZ=UTC 0 0 * * *",
            "set spec.timeZone",
        ),
        (
            "minute 60",
            "60 * * * *",
            "minute: \"60\" goes above the maximum 59",
        ),
        (
            "hour 24",
            "0 24 * * *",
            "hour: \"24\" goes above the maximum 23",
        ),
        (
            "day 0",
            "0 0 0 * *",
            "day-of-month: \"0\" starts below the minimum 1",
        ),
        (
            "month 13",
            "0 0 * 13 *",
            "month: \"13\" goes above the maximum 12",
        ),
        (
            "month 0",
            "0 0 * 0 *",
            "month: \"0\" starts below the minimum 1",
        ),
        (
            "a huge number",
            "99999999999999999999 * * * *",
            "goes above the maximum 59",
        ),
        ("a reversed range", "5-1 * * * *", "starts after it ends"),
        ("step 0", "*/0 * * * *", "has a step of 0"),
        (
            "a step that is no number",
            "*/x * * * *",
            "step \"x\" is not a number",
        ),
        ("an empty step", "1/ * * * *", "step \"\" is not a number"),
        ("two slashes", "1/2/3 * * * *", "more than one /"),
        ("two hyphens", "1-2-3 * * * *", "more than one -"),
        (
            "stricter: a leading +",
            "+5 * * * *",
            "a leading + is not accepted",
        ),
        (
            "stricter: croner's AND modifier",
            "0 2 */2 * +6",
            "a leading + is not accepted",
        ),
        (
            "a negative number",
            "-1 * * * *",
            "value \"\" is not a number",
        ),
        (
            "names only where CronJob has them",
            "0 0 mon * *",
            "day-of-month: value \"mon\" is not a number",
        ),
        (
            "a month name in day-of-week",
            "0 0 * * jan",
            "(use 0-6 or sun-sat)",
        ),
        (
            "stricter: an empty list element",
            "1,,2 * * * *",
            "has an empty list element",
        ),
        (
            "stricter: a trailing comma",
            "1, * * * *",
            "has an empty list element",
        ),
        (
            "stricter: *-5",
            "*-5 * * * *",
            "a range starts at a number, not at *",
        ),
        ("four fields", "0 0 * *", "has 4 fields; expected 5"),
        (
            "six fields (seconds)",
            "0 0 0 * * *",
            "a seconds field is not supported",
        ),
        ("empty", "", "has 0 fields"),
    ];
    for (what, text, expected) in cases {
        match CronSpec::parse(text) {
            Ok(spec) => panic!("{what}: {text:?} was accepted as {spec:?}"),
            Err(e) => assert!(
                e.to_string().contains(expected),
                "{what}: {text:?}: {e:?} lacks {expected:?}"
            ),
        }
    }
}
