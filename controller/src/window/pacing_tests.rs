use std::time::{Duration, Instant};

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A survey of 500 ms (2,000 workspaces, say) that ended at `start`, for generation 3,
/// started when 10 of the window's stops had ended, awaiting nothing.
fn survey_at(start: Instant) -> LastSurvey {
    LastSurvey {
        ended: start,
        took: ms(500),
        generation: Some(3),
        stops_ended_before: 10,
        awaiting: None,
        waiting: false,
    }
}

/// Each case (what, the record, stops ended so far, want: wait) for generation 3, woken
/// 100 ms after `start`.
fn assert_waits_100_ms_after(start: Instant, cases: &[(&str, LastSurvey, u64, Option<Duration>)]) {
    for (what, record, stops_ended, want) in cases {
        assert_eq!(
            wait_before_survey(Some(record), Some(3), *stops_ended, start + ms(100)),
            *want,
            "{what}"
        );
    }
}

#[test]
fn a_window_surveys_again_after_four_times_its_last_survey() {
    let start = Instant::now();
    let last = survey_at(start);
    // (what, the record, the pass's generation, time since `start`, want: wait)
    let cases = [
        ("first pass of a window", None, Some(3), ms(0), None),
        (
            "woken at once by a stop's end",
            Some(last),
            Some(3),
            ms(0),
            Some(ms(2000)),
        ),
        (
            "woken half-way through the pause",
            Some(last),
            Some(3),
            ms(1200),
            Some(ms(800)),
        ),
        ("at the pause's end", Some(last), Some(3), ms(2000), None),
        ("past it: the 2 s poll", Some(last), Some(3), ms(2500), None),
        (
            "the spec changed: survey at once",
            Some(last),
            Some(4),
            ms(0),
            None,
        ),
        (
            "a survey from the watch, of milliseconds, pauses the floor",
            Some(LastSurvey {
                took: ms(3),
                ..last
            }),
            Some(3),
            ms(400),
            Some(ms(600)),
        ),
        (
            "a survey that listed nothing has no pause",
            Some(LastSurvey {
                took: Duration::ZERO,
                ..last
            }),
            Some(3),
            ms(0),
            None,
        ),
    ];
    for (what, record, generation, after, want) in cases {
        assert_eq!(
            wait_before_survey(record.as_ref(), generation, 10, start + after),
            want,
            "{what}"
        );
    }
}

#[test]
fn the_end_of_the_last_stop_in_flight_is_surveyed_at_once() {
    let start = Instant::now();
    let awaiting = |n| LastSurvey {
        awaiting: Some(n),
        ..survey_at(start)
    };
    // Woken 100 ms after the survey, well inside its 2 s pause.
    // (what, the record, stops ended so far, want: wait)
    let cases = [
        (
            "3 in flight, 2 ended: the pause holds",
            awaiting(3),
            12,
            Some(ms(1900)),
        ),
        ("3 in flight, all 3 ended", awaiting(3), 13, None),
        (
            "more ended than were in flight (one read as stopped, ended during the survey)",
            awaiting(3),
            14,
            None,
        ),
        (
            "awaiting nothing: stops ending is no reason",
            survey_at(start),
            500,
            Some(ms(1900)),
        ),
        (
            "a count from before the survey is not counted again",
            LastSurvey {
                stops_ended_before: 13,
                ..awaiting(3)
            },
            13,
            Some(ms(1900)),
        ),
    ];
    assert_waits_100_ms_after(start, &cases);
    assert_eq!(
        wait_before_survey(Some(&awaiting(3)), Some(4), 10, start),
        None,
        "a changed spec is surveyed at once, as always"
    );
}

#[test]
fn a_stop_that_ends_under_a_budget_is_paced_by_the_survey_alone() {
    let start = Instant::now();
    // A survey from the watch of 3 ms, woken 100 ms after it.
    let watched = |waiting| LastSurvey {
        took: ms(3),
        waiting,
        ..survey_at(start)
    };
    // (what, the record, stops ended so far, want: wait)
    let cases = [
        ("workspaces wait, a stop ended", watched(true), 11, None),
        (
            "workspaces wait, no stop ended yet: the floor",
            watched(true),
            10,
            Some(ms(900)),
        ),
        (
            "nothing waits: a stop's end frees no slot, the floor",
            watched(false),
            11,
            Some(ms(900)),
        ),
        (
            "a list of 500 ms keeps its own pause",
            LastSurvey {
                waiting: true,
                ..survey_at(start)
            },
            11,
            Some(ms(1900)),
        ),
    ];
    assert_waits_100_ms_after(start, &cases);
}

#[test]
fn a_drain_leaves_stops_waiting_when_some_are_neither_in_flight_asked_nor_postponed() {
    let drain = |remaining, in_flight, to_stop: usize, postponed| Drain {
        remaining,
        in_flight,
        to_stop: vec![("team".to_string(), "w".to_string()); to_stop],
        postponed,
        ..Drain::default()
    };
    // (what, drain after budget and hold, want)
    let cases = [
        (
            "a budget of 2: 2 in flight, 3 wait",
            drain(5, 2, 0, 0),
            true,
        ),
        (
            "a slot refilled: 1 in flight, 1 asked, 3 wait",
            drain(5, 1, 1, 0),
            true,
        ),
        ("no budget: all asked", drain(5, 2, 3, 0), false),
        ("the rest postponed", drain(5, 2, 0, 3), false),
        ("drained", drain(0, 0, 0, 0), false),
    ];
    for (what, drain, want) in cases {
        assert_eq!(stops_waiting(&drain), want, "{what}");
    }
}

#[test]
fn a_drain_awaits_its_stops_only_when_nothing_else_is_left() {
    let key = |n: &str| ("team".to_string(), n.to_string());
    let drain = |remaining, in_flight, to_stop: &[&str]| Drain {
        remaining,
        in_flight,
        to_stop: to_stop.iter().map(|n| key(n)).collect(),
        ..Drain::default()
    };
    // (what, drain after budget and hold, want)
    let cases = [
        ("all 5 in flight", drain(5, 5, &[]), Some(5)),
        (
            "3 in flight, the last 2 asked now",
            drain(5, 3, &["a", "b"]),
            Some(5),
        ),
        (
            "2 wait for the budget, a postponement, a hold or another window",
            drain(5, 3, &[]),
            None,
        ),
        ("drained: nothing to count down", drain(0, 0, &[]), None),
    ];
    for (what, drain, want) in cases {
        assert_eq!(stops_awaited(&drain), want, "{what}");
    }
}

#[test]
fn the_pacer_counts_a_windows_stops_from_its_first_survey_until_it_is_deleted() {
    let pacer = SurveyPacer::default();
    let now = Instant::now();
    pacer.stop_ended("upgrade");
    let before = pacer.survey_starting("upgrade");
    assert_eq!(
        before, 0,
        "a stop before the first survey has nothing to count against"
    );
    pacer.stop_ended("upgrade");
    let survey = LastSurvey {
        ended: now,
        took: ms(300),
        generation: Some(1),
        stops_ended_before: before,
        awaiting: Some(2),
        waiting: false,
    };
    pacer.record("upgrade", survey);
    assert_eq!(
        pacer.wait("upgrade", Some(1), now),
        Some(ms(1200)),
        "1 of 2"
    );
    assert_eq!(pacer.wait("other", Some(1), now), None, "per window");
    pacer.clone().stop_ended("upgrade");
    assert_eq!(pacer.wait("upgrade", Some(1), now), None, "2 of 2, shared");
    pacer.forget("upgrade");
    assert_eq!(pacer.wait("upgrade", Some(1), now), None, "forgotten");
    pacer.stop_ended("upgrade");
    assert_eq!(
        pacer.survey_starting("upgrade"),
        0,
        "a deleted window's late stops are not kept"
    );
}
