//! "May this window pass survey the Workspaces now?" Pure rule, with the little state it
//! keeps per window.
//!
//! Each pass of an active window lists every Workspace, a page of 200 at a time: that is
//! how it knows what is covered, stopped and in flight. While a window drains, passes come
//! from its 2 s poll, from its own status writes and from every stop that ends
//! (`stop_ended`), so back to back; and a survey's cost grows with the fleet. Together the
//! survey's share of the API server grew as the square of the fleet: at 1,000 workspaces a
//! drain listed 0.2 pages a stop, at 10,000 one pass is 50 pages, about 2.6 s of the API
//! server's CPU (docs/benchmarks.md).
//!
//! So a window surveys again only after a pause of `GAP_PER_SURVEY_TIME` times its last
//! survey's duration, and at least `MIN_GAP`: the survey then takes at most a fifth of the
//! window reconciler's time, whatever the fleet, and a slow, busy API server, whose pages
//! take longer, is asked less often. A drain's progress is now surveyed from the
//! controller's own watch (`survey_index`), in a millisecond, so its pause is the floor;
//! the list that confirms `Drained`, and the surveys the watch does not serve, are paced
//! by their own duration. A changed spec (a new `metadata.generation`: paused, ended,
//! widened) is surveyed at once.
//!
//! One wake skips the pause: the end of the drain's last stop. When a survey leaves the
//! drain nothing to do but wait for the stops in flight (`stops_awaited`), the pacer counts
//! the stops that end from the survey's start on, and once as many have ended as were in
//! flight the next pass surveys at once, to confirm `Drained`. Without it `Drained` came a
//! whole pause after the last pod was gone: 64 s at 5,000 workspaces (docs/benchmarks.md).
//! A stop that ended during the survey but before its page was read is counted without
//! having been in flight, so that survey may come a little early, and simply finds the
//! last few still in flight and counts them down again. A stop whose wake is lost (a
//! controller restart) only leaves the pause in place.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::plan::Drain;

/// A survey's pause, in multiples of the survey's own duration.
pub const GAP_PER_SURVEY_TIME: u32 = 4;

/// The shortest pause after a survey. A survey from the watch (`survey_index`) takes a
/// millisecond, but the pass around it still lists the namespaces and writes the window's
/// status: without a floor every stop that ends would bring a pass. Not when the survey
/// left workspaces waiting (`LastSurvey::waiting`): then a stop's end may free the slot
/// the next one waits for, and only the survey's own duration paces it, as before the
/// watch served surveys.
pub const MIN_GAP: Duration = Duration::from_secs(1);

/// A window's last survey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastSurvey {
    /// When it ended.
    pub ended: Instant,
    /// How long it took; zero when there was nothing to survey.
    pub took: Duration,
    /// The window's `metadata.generation` it surveyed for.
    pub generation: Option<i64>,
    /// How many of the window's stops had ended (`SurveyPacer::stop_ended`) when it
    /// started.
    pub stops_ended_before: u64,
    /// How many stops in flight it left the drain waiting for, when that was all the
    /// drain had left to do (`stops_awaited`).
    pub awaiting: Option<u32>,
    /// Whether it left covered workspaces neither in flight, asked now nor postponed: held
    /// back by the budget, a hold or another window (`stops_waiting`).
    pub waiting: bool,
}

/// Whether a drain leaves covered workspaces waiting after this pass: not in flight, not
/// asked to stop now, not postponed. Under a budget those are what a freed slot starts.
pub fn stops_waiting(drain: &Drain) -> bool {
    let accounted = drain
        .in_flight
        .saturating_add(u32::try_from(drain.to_stop.len()).unwrap_or(u32::MAX))
        .saturating_add(drain.postponed);
    drain.remaining > accounted
}

/// How many stops a drain waits for when they are all it has left: every remaining
/// workspace is in flight or is asked to stop by this very pass (none waits for the
/// budget, a postponement, a hold or another window). `None` otherwise, and when nothing
/// remains.
pub fn stops_awaited(drain: &Drain) -> Option<u32> {
    let in_flight = drain
        .in_flight
        .saturating_add(u32::try_from(drain.to_stop.len()).unwrap_or(u32::MAX));
    (drain.remaining > 0 && drain.remaining == in_flight).then_some(in_flight)
}

/// How long a pass of a window at `generation` waits before it may survey: `None` to
/// survey now. `stops_ended` counts the window's stops that have ended so far.
pub fn wait_before_survey(
    last: Option<&LastSurvey>,
    generation: Option<i64>,
    stops_ended: u64,
    now: Instant,
) -> Option<Duration> {
    let last = last.filter(|l| l.generation == generation)?;
    let ended_since = stops_ended.saturating_sub(last.stops_ended_before);
    if last
        .awaiting
        .is_some_and(|awaited| ended_since >= u64::from(awaited))
    {
        return None;
    }
    if last.took.is_zero() {
        return None;
    }
    let floor = if last.waiting && ended_since > 0 {
        Duration::ZERO
    } else {
        MIN_GAP
    };
    let gap = last.took.saturating_mul(GAP_PER_SURVEY_TIME).max(floor);
    let since = now.saturating_duration_since(last.ended);
    gap.checked_sub(since).filter(|wait| !wait.is_zero())
}

/// What the pacer keeps of one window.
#[derive(Debug, Default)]
struct WindowPace {
    last: Option<LastSurvey>,
    stops_ended: u64,
}

/// The last survey of each window, by name, and how many of its stops have ended. Cloned
/// handles share it.
#[derive(Clone, Default)]
pub struct SurveyPacer(Arc<Mutex<HashMap<String, WindowPace>>>);

impl SurveyPacer {
    fn windows(&self) -> std::sync::MutexGuard<'_, HashMap<String, WindowPace>> {
        // The map stays consistent whatever panicked while holding it: each call changes
        // one field of one entry.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How long window `name` at `generation` waits before it may survey, if it must.
    pub fn wait(&self, name: &str, generation: Option<i64>, now: Instant) -> Option<Duration> {
        let windows = self.windows();
        let pace = windows.get(name)?;
        wait_before_survey(pace.last.as_ref(), generation, pace.stops_ended, now)
    }

    /// Called as a survey of window `name` starts: how many of its stops have ended so far
    /// (`LastSurvey::stops_ended_before`). From now on they are counted.
    pub fn survey_starting(&self, name: &str) -> u64 {
        self.windows()
            .entry(name.to_string())
            .or_default()
            .stops_ended
    }

    /// Records a survey of window `name`.
    pub fn record(&self, name: &str, survey: LastSurvey) {
        self.windows().entry(name.to_string()).or_default().last = Some(survey);
    }

    /// Counts the end of one of window `name`'s stops. A window not surveyed yet (or
    /// deleted) has nothing to count against, and gets no entry: the annotation that
    /// names the window cannot grow the map.
    pub fn stop_ended(&self, name: &str) {
        if let Some(pace) = self.windows().get_mut(name) {
            pace.stops_ended = pace.stops_ended.saturating_add(1);
        }
    }

    /// Forgets a deleted window.
    pub fn forget(&self, name: &str) {
        self.windows().remove(name);
    }
}

#[cfg(test)]
#[path = "pacing_tests.rs"]
mod tests;
