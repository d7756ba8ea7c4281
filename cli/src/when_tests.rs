use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("test timestamp")
}

fn zone(name: &str) -> TimeZone {
    jiff::tz::db().get(name).expect("test zone")
}

#[test]
fn for_durations() {
    let cases: &[(&str, Result<i64, &str>)] = &[
        ("2h", Ok(7200)),
        ("90m", Ok(5400)),
        ("1h30m", Ok(5400)),
        (" 45s ", Ok(45)),
        ("0s", Err("longer than zero")),
        ("-1h", Err("longer than zero")),
        ("soon", Err("not a duration")),
        ("", Err("not a duration")),
    ];
    for (text, want) in cases {
        match (parse_for(text), want) {
            (Ok(d), Ok(secs)) => assert_eq!(d.as_secs(), *secs, "{text}"),
            (Err(e), Err(part)) => assert!(e.contains(part), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn until_and_at_times() {
    // 2026-03-28 is the Saturday before Berlin springs forward (02:00 -> 03:00 on the 29th).
    let now = ts("2026-03-28T20:00:00Z"); // 21:00 in Berlin
    let berlin = zone("Europe/Berlin");
    let utc = TimeZone::UTC;
    let cases: &[(&str, &TimeZone, Result<&str, &str>)] = &[
        ("2026-12-01T22:00:00Z", &berlin, Ok("2026-12-01T22:00:00Z")),
        (
            "2026-12-01T23:00:00+01:00",
            &utc,
            Ok("2026-12-01T22:00:00Z"),
        ),
        (
            "2026-07-01T22:00[America/New_York]",
            &utc,
            Ok("2026-07-02T02:00:00Z"),
        ),
        ("2026-12-01 22:00", &berlin, Ok("2026-12-01T21:00:00Z")),
        ("2026-12-01T22:00:30", &utc, Ok("2026-12-01T22:00:30Z")),
        // A time of day later today is today ...
        ("23:30", &berlin, Ok("2026-03-28T22:30:00Z")),
        // ... one already past is tomorrow, after the clocks changed.
        ("20:00", &berlin, Ok("2026-03-29T18:00:00Z")),
        // 02:30 does not exist that night: forward past the gap, like the clock.
        ("2026-03-29 02:30", &berlin, Ok("2026-03-29T01:30:00Z")),
        ("next tuesday", &utc, Err("is not a time")),
        ("25:00", &utc, Err("is not a time")),
    ];
    for (text, zone, want) in cases {
        match (parse_time(text, now, zone), want) {
            (Ok(t), Ok(w)) => assert_eq!(t, ts(w), "{text}"),
            (Err(e), Err(part)) => assert!(e.contains(part), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn human_durations_read_like_kubectl() {
    let cases = [
        (0, "0s"),
        (45, "45s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3599, "59m"),
        (7200, "2h"),
        (3 * 3600 - 1, "2h59m"),
        (3 * 3600 + 5 * 60, "3h5m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (2 * 86_400 + 4 * 3600, "2d4h"),
        (120 * 86_400, "120d"),
        (-90, "90s"),
    ];
    for (secs, want) in cases {
        assert_eq!(human(SignedDuration::from_secs(secs)), want, "{secs}s");
    }
}

#[test]
fn relative_times() {
    let now = ts("2026-01-01T00:00:00Z");
    assert_eq!(relative(ts("2026-01-01T02:00:00Z"), now), "in 2h");
    assert_eq!(relative(ts("2025-12-31T23:55:00Z"), now), "5m ago");
}

#[test]
fn formats() {
    let t = ts("2026-10-25T00:30:00.75Z");
    assert_eq!(rfc3339(t), "2026-10-25T00:30:00Z");
    assert_eq!(whole_seconds(t), ts("2026-10-25T00:30:00Z"));
    // Both 02:30s of Berlin's fall-back night, told apart by the abbreviation.
    let berlin = zone("Europe/Berlin");
    assert_eq!(wall_clock(t, &berlin), "2026-10-25 02:30 CEST");
    assert_eq!(
        wall_clock(ts("2026-10-25T01:30:00Z"), &berlin),
        "2026-10-25 02:30 CET"
    );
    assert_eq!(
        wall_clock(ts("2026-10-25T01:30:07Z"), &TimeZone::UTC),
        "2026-10-25 01:30:07 UTC"
    );
}
