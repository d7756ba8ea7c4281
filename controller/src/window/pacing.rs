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
//! survey's duration: the survey then takes at most a fifth of the window reconciler's
//! time, whatever the fleet, and a slow, busy API server, whose pages take longer, is
//! asked less often. At a few hundred workspaces the pause is a fraction of a second. A
//! changed spec (a new `metadata.generation`: paused, ended, widened) is surveyed at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A survey's pause, in multiples of the survey's own duration.
pub const GAP_PER_SURVEY_TIME: u32 = 4;

/// A window's last survey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastSurvey {
    /// When it ended.
    pub ended: Instant,
    /// How long it took.
    pub took: Duration,
    /// The window's `metadata.generation` it surveyed for.
    pub generation: Option<i64>,
}

/// How long a pass of a window at `generation` waits before it may survey: `None` to
/// survey now.
pub fn wait_before_survey(
    last: Option<&LastSurvey>,
    generation: Option<i64>,
    now: Instant,
) -> Option<Duration> {
    let last = last.filter(|l| l.generation == generation)?;
    let gap = last.took.saturating_mul(GAP_PER_SURVEY_TIME);
    let since = now.saturating_duration_since(last.ended);
    gap.checked_sub(since).filter(|wait| !wait.is_zero())
}

/// The last survey of each window, by name. Cloned handles share it.
#[derive(Clone, Default)]
pub struct SurveyPacer(Arc<Mutex<HashMap<String, LastSurvey>>>);

impl SurveyPacer {
    /// How long window `name` at `generation` waits before it may survey, if it must.
    pub fn wait(&self, name: &str, generation: Option<i64>, now: Instant) -> Option<Duration> {
        let surveys = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        wait_before_survey(surveys.get(name), generation, now)
    }

    /// Records a survey of window `name`.
    pub fn record(&self, name: &str, survey: LastSurvey) {
        let mut surveys = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        surveys.insert(name.to_string(), survey);
    }

    /// Forgets a deleted window.
    pub fn forget(&self, name: &str) {
        let mut surveys = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        surveys.remove(name);
    }
}

#[cfg(test)]
#[path = "pacing_tests.rs"]
mod tests;
