//! When is a maintenance window active? Pure functions of the schedule and an instant.
//!
//! A recurring window is a schedule in Kubernetes CronJob's language (`crate::cron`)
//! matched against the *wall clock* of its time zone, plus a duration of elapsed time.
//! Daylight-saving days follow lifeguard's rule, which is what a person reading "every
//! Saturday at 02:30" expects, and under which a window is never skipped:
//!
//! * a start time that does not exist that day (the clock jumps from 02:00 to 03:00) starts
//!   at the jump itself (03:00 new time), also when it is the jump's first minute (02:00):
//!   several skipped start times that land on that instant make one occurrence;
//! * a start time that exists twice (the clock goes back from 02:00 to 01:00) starts once,
//!   at the first of the two instants; this holds for every start time in the repeated
//!   hour, also those of a wildcard hour (`*/30 * * * *`), which Vixie cron would run in
//!   both passes;
//! * the duration is elapsed time, not wall-clock arithmetic: a 2h window opening at 01:30
//!   on the night the clock goes back from 02:00 to 01:00 closes two real hours later, at
//!   02:30 new time.
//!
//! (CronJob's own cron library skips a start time that does not exist that day; a
//! maintenance window must not be skipped, so lifeguard keeps the rule above.)

use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp};

use crate::cron::{CronSpec, Extension};

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
    cron: CronSpec,
    duration: SignedDuration,
    zone: TimeZone,
}

/// How far ahead to look for the next occurrence: 29 February on a Monday, or on any day
/// of a century year that is no leap year (2100), is up to eight years away; anything
/// rarer never matches.
const SEARCH_DAYS: usize = 366 * 9;

impl Recurring {
    /// `duration` must be positive; the validation in `crate::validation` ensures it.
    pub(crate) fn new(cron: CronSpec, duration: SignedDuration, zone: TimeZone) -> Self {
        Self {
            cron,
            duration,
            zone,
        }
    }

    pub fn duration(&self) -> SignedDuration {
        self.duration
    }

    /// Schedule syntax in use that Kubernetes CronJob does not accept.
    pub fn extensions(&self) -> Vec<Extension> {
        self.cron.extensions()
    }

    /// The instant a wall-clock start time means, by the rule in the module docs.
    ///
    /// Wall times map to instants in order (a gap collapses onto the jump, a fold takes
    /// its first pass), which is what lets the searches below stop at the first match.
    fn start_of(&self, wall: DateTime) -> Option<Timestamp> {
        let ambiguous = self.zone.to_ambiguous_timestamp(wall);
        match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { offset }
            | AmbiguousOffset::Fold { before: offset, .. } => offset.to_timestamp(wall).ok(),
            AmbiguousOffset::Gap { after, .. } => {
                // Read with the new offset the wall time lies before the jump, by less
                // than the gap; the jump is the first transition after that instant. (Read
                // with the old offset it lies at or after the jump, and exactly on it when
                // the start is the gap's first minute: a search for the transition before
                // it would then find the previous one.)
                let before_jump = after.to_timestamp(wall).ok()?;
                self.zone
                    .following(before_jump)
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

    /// Start instants of the matching wall times of `date`, earliest first.
    fn starts_on(&self, date: Date) -> impl DoubleEndedIterator<Item = Timestamp> + '_ {
        let matches = self.cron.matches_date(date);
        self.cron
            .times_of_day()
            .filter(move |_| matches)
            .filter_map(move |(h, m)| self.start_of(date.at(h, m, 0, 0)))
    }

    /// The latest start in `(after, until]`. Starts walk backwards from a day past
    /// `until`'s wall date: just after the clock went back, later wall times than `until`'s
    /// have already happened.
    fn latest_start(&self, after: Timestamp, until: Timestamp) -> Option<Timestamp> {
        let oldest = after.to_zoned(self.zone.clone()).date().yesterday().ok()?;
        let mut date = until.to_zoned(self.zone.clone()).date().tomorrow().ok()?;
        while date >= oldest {
            if let Some(start) = self.starts_on(date).rev().find(|start| *start <= until) {
                return (start > after).then_some(start);
            }
            date = date.yesterday().ok()?;
        }
        None
    }

    fn in_force_started_by(&self, t: Timestamp, by: Timestamp) -> Option<Occurrence> {
        // All occurrences last as long, so those containing t started in (t - duration, t].
        let after = t.checked_sub(self.duration).ok()?;
        let start = self.latest_start(after, by.min(t))?;
        self.occurrence(start).filter(|o| o.contains(t))
    }

    fn next_after(&self, t: Timestamp, n: usize) -> Vec<Occurrence> {
        let mut found: Vec<Occurrence> = Vec::with_capacity(n.min(64));
        let mut date = t.to_zoned(self.zone.clone()).date();
        for _ in 0..SEARCH_DAYS {
            for start in self.starts_on(date) {
                // Skipped start times collapse onto the end of the jump: keep one.
                let duplicate = found.last().is_some_and(|o| o.start == start);
                if start <= t || duplicate {
                    continue;
                }
                match self.occurrence(start) {
                    Some(o) => found.push(o),
                    None => return found,
                }
                if found.len() >= n {
                    return found;
                }
            }
            match date.tomorrow() {
                Ok(next) => date = next,
                Err(_) => break,
            }
        }
        found
    }
}

impl Schedule {
    /// The occurrence in force at `t`, if any.
    /// The occurrence in force at `t`, if any. Occurrences overlap when they last longer
    /// than the gap between starts; then it is the one that started last.
    pub fn active_at(&self, t: Timestamp) -> Option<Occurrence> {
        self.in_force_started_by(t, t)
    }

    /// Of the occurrences containing `t`, the one that started last at or before `by`:
    /// walks back through overlapping occurrences (`crate::exclusion` looks past skipped
    /// ones this way).
    pub fn in_force_started_by(&self, t: Timestamp, by: Timestamp) -> Option<Occurrence> {
        match self {
            Self::OneOff(o) => Some(*o).filter(|o| o.contains(t) && o.start <= by),
            Self::Recurring(r) => r.in_force_started_by(t, by),
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

    /// How long each occurrence lasts.
    pub fn occurrence_length(&self) -> SignedDuration {
        match self {
            Self::OneOff(o) => o.end.duration_since(o.start),
            Self::Recurring(r) => r.duration(),
        }
    }

    /// Schedule syntax in use that Kubernetes CronJob does not accept (one-off: none).
    pub fn extensions(&self) -> Vec<Extension> {
        match self {
            Self::OneOff(_) => Vec::new(),
            Self::Recurring(r) => r.extensions(),
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
