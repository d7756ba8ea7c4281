//! When is a maintenance window active? Pure functions of the schedule and an instant.
//!
//! A recurring window is a 5-field cron expression matched against the *wall clock* of its
//! time zone, plus a duration of elapsed time. Daylight-saving days follow Vixie cron,
//! which is what a person reading "every Saturday at 02:30" expects:
//!
//! * a start time that does not exist that day (the clock jumps from 02:00 to 03:00) starts
//!   at the first instant after the jump (03:00 new time): the window is not skipped, and
//!   several skipped start times that land on that instant make one occurrence;
//! * a start time that exists twice (the clock goes back from 02:00 to 01:00) starts once,
//!   at the first of the two instants;
//! * the duration is elapsed time, not wall-clock arithmetic: a 2h window opening at 01:30
//!   on the night the clock goes back from 02:00 to 01:00 closes two real hours later, at
//!   02:30 new time.
//!
//! Day-of-month and day-of-week combine as in Kubernetes CronJob: a day field is
//! unrestricted only when it is `*` or `?` (also `*/1`, or in a list); `*/2` is restricted.
//! When both are restricted a day matching either one matches; otherwise a day must match
//! the restricted one. `crate::validation` rewrites the fields so croner follows this rule.

use croner::Cron;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp};

/// One opening of a window: `start <= t < end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    pub start: Timestamp,
    pub end: Timestamp,
}

impl Occurrence {
    pub fn contains(&self, t: Timestamp) -> bool {
        self.start <= t && t < self.end
    }
}

#[derive(Debug, Clone)]
pub enum Schedule {
    OneOff(Occurrence),
    Recurring(Box<Recurring>),
}

#[derive(Debug, Clone)]
pub struct Recurring {
    cron: Cron,
    duration: SignedDuration,
    zone: TimeZone,
}

/// Enough steps to walk over any cluster of wall-clock matches that map before `t` (a
/// minutely schedule across a three-hour DST shift); no input can loop longer.
const MAX_STEPS: usize = 400;

impl Recurring {
    /// `duration` must be positive; the validation in `crate::validation` ensures it.
    pub(crate) fn new(cron: Cron, duration: SignedDuration, zone: TimeZone) -> Self {
        Self {
            cron,
            duration,
            zone,
        }
    }

    pub fn duration(&self) -> SignedDuration {
        self.duration
    }

    /// The instant a wall-clock start time means, by the rule in the module docs.
    fn start_of(&self, wall: DateTime) -> Option<Timestamp> {
        let ambiguous = self.zone.to_ambiguous_timestamp(wall);
        match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { offset }
            | AmbiguousOffset::Fold { before: offset, .. } => offset.to_timestamp(wall).ok(),
            AmbiguousOffset::Gap { before, .. } => {
                // Read with the old offset the wall time lies past the jump; the jump
                // itself is the transition just before that instant.
                let past_jump = before.to_timestamp(wall).ok()?;
                self.zone
                    .preceding(past_jump)
                    .next()
                    .map(|transition| transition.timestamp())
            }
        }
    }

    fn occurrence(&self, start: Timestamp) -> Option<Occurrence> {
        Some(Occurrence {
            start,
            end: start.checked_add(self.duration).ok()?,
        })
    }

    fn active_at(&self, t: Timestamp) -> Option<Occurrence> {
        let wall_now = t.to_zoned(self.zone.clone()).datetime();
        // Just after the clock went back, later wall times than now may have happened
        // already (in the first pass): start the backward walk that much later.
        let earlier = t.checked_sub(SignedDuration::from_hours(3)).ok()?;
        let shift = self.zone.to_offset(earlier).seconds() - self.zone.to_offset(t).seconds();
        let mut cursor = wall_now
            .checked_add(SignedDuration::from_secs(i64::from(shift.max(0))))
            .ok()?;
        let mut inclusive = true;
        for _ in 0..MAX_STEPS {
            let wall = self
                .cron
                .find_previous_occurrence(&cursor, inclusive)
                .ok()?;
            let start = self.start_of(wall)?;
            if start <= t {
                return self.occurrence(start).filter(|o| o.contains(t));
            }
            cursor = wall;
            inclusive = false;
        }
        None
    }

    fn next_after(&self, t: Timestamp, n: usize) -> Vec<Occurrence> {
        let mut found: Vec<Occurrence> = Vec::with_capacity(n);
        let Ok(from) = t.checked_sub(SignedDuration::from_hours(26)) else {
            return found;
        };
        let mut cursor = from.to_zoned(self.zone.clone()).datetime();
        let mut inclusive = true;
        let mut steps = 0;
        while found.len() < n && steps < MAX_STEPS * 8 {
            steps += 1;
            let Ok(wall) = self.cron.find_next_occurrence(&cursor, inclusive) else {
                break;
            };
            cursor = wall;
            inclusive = false;
            let Some(start) = self.start_of(wall) else {
                break;
            };
            // Skipped start times collapse onto the end of the jump: keep one.
            let duplicate = found.last().is_some_and(|o| o.start == start);
            if start > t && !duplicate {
                match self.occurrence(start) {
                    Some(o) => found.push(o),
                    None => break,
                }
            }
        }
        found
    }
}

impl Schedule {
    /// The occurrence in force at `t`, if any.
    pub fn active_at(&self, t: Timestamp) -> Option<Occurrence> {
        match self {
            Self::OneOff(o) => Some(*o).filter(|o| o.contains(t)),
            Self::Recurring(r) => r.active_at(t),
        }
    }

    /// The next `n` occurrences that start strictly after `t`, in order.
    pub fn next_after(&self, t: Timestamp, n: usize) -> Vec<Occurrence> {
        match self {
            Self::OneOff(o) if o.start > t && n > 0 => vec![*o],
            Self::OneOff(_) => Vec::new(),
            Self::Recurring(r) => r.next_after(t, n),
        }
    }

    /// The next instant at which `active_at` may change its answer: the end of the current
    /// occurrence or the start of the next one. Lets callers sleep until then.
    pub fn next_change(&self, t: Timestamp) -> Option<Timestamp> {
        match self.active_at(t) {
            Some(o) => Some(o.end),
            None => self.next_after(t, 1).first().map(|o| o.start),
        }
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod schedule_tests;
