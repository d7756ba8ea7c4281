use std::time::{Duration, Instant};

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_window_surveys_again_after_four_times_its_last_survey() {
    let start = Instant::now();
    // A survey of 500 ms (2,000 workspaces, say) that ended at `start`, for generation 3.
    let last = LastSurvey {
        ended: start,
        took: ms(500),
        generation: Some(3),
    };
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
            wait_before_survey(record.as_ref(), generation, start + after),
            want,
            "{what}"
        );
    }
}

#[test]
fn the_pacer_keeps_each_windows_last_survey_until_it_is_deleted() {
    let pacer = SurveyPacer::default();
    let now = Instant::now();
    let survey = LastSurvey {
        ended: now,
        took: ms(100),
        generation: Some(1),
    };
    pacer.record("upgrade", survey);
    assert_eq!(pacer.wait("upgrade", Some(1), now), Some(ms(400)));
    assert_eq!(pacer.wait("other", Some(1), now), None, "per window");
    pacer.clone().forget("upgrade");
    assert_eq!(pacer.wait("upgrade", Some(1), now), None, "forgotten");
}
