//! Exclusions: periods in which a recurring window does not open (holidays, release weeks).
//!
//! An occurrence that overlaps an exclusion is skipped whole: a window that would open
//! for half its length would drain for half a night, which nobody asked for. Occurrences
//! come from the schedule (`crate::schedule`), so the daylight-saving rule holds here too;
//! an exclusion written as a date spans that calendar day in the window's time zone, 23 or
//! 25 hours long on the days the clock changes.

use std::str::FromStr;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use crate::field_errors::{FieldError, ValidationErrors};
use crate::maintenance::{ExclusionSpec, MaintenanceWindowSpec};
use crate::schedule::{Occurrence, Schedule};

/// More would only be hostile input: every admission decision scans them.
pub const MAX_EXCLUSIONS: usize = 50;
/// A reason is a line in a status and a table, not a document.
pub const MAX_REASON_CHARS: usize = 256;
/// Upcoming occurrences looked at per search, and searches at most: an hourly window
/// excluded for a week skips 168; a search that finds nothing past this gives up.
const BATCH: usize = 64;
const MAX_BATCHES: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusion {
    /// Inclusive.
    pub start: Timestamp,
    /// Exclusive.
    pub end: Timestamp,
    pub reason: Option<String>,
}

impl Exclusion {
    pub fn overlaps(&self, o: &Occurrence) -> bool {
        o.start < self.end && self.start < o.end
    }
}

/// One occurrence of the schedule, and the exclusion that skips it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upcoming {
    pub occurrence: Occurrence,
    pub skipped_by: Option<Exclusion>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclusions(Vec<Exclusion>);

impl Exclusions {
    pub fn new(list: Vec<Exclusion>) -> Self {
        Self(list)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first exclusion (in spec order) that skips `o`.
    pub fn skipping(&self, o: &Occurrence) -> Option<&Exclusion> {
        self.0.iter().find(|e| e.overlaps(o))
    }

    /// The occurrence in force at `t` that no exclusion skips, the latest-started if
    /// several are. Occurrences overlap when they last longer than the gap between starts:
    /// `t` is in force while any occurrence containing it is not skipped, so skipping one
    /// never switches off a neighbour that was not skipped.
    pub fn active_at(&self, schedule: &Schedule, t: Timestamp) -> Option<Occurrence> {
        let length = schedule.occurrence_length();
        let mut by = t;
        // An occurrence skipped by `e` started after `e.start - length` (it overlaps `e`),
        // and none that started by then overlaps `e`: each round passes one exclusion for
        // good, so there are at most as many rounds as exclusions, plus one.
        for _ in 0..=self.0.len() {
            let o = schedule.in_force_started_by(t, by)?;
            match self.skipping(&o) {
                None => return Some(o),
                Some(e) => by = e.start.checked_sub(length).ok()?,
            }
        }
        None
    }

    /// The next `n` occurrences after `t` that are not skipped.
    pub fn next_after(&self, schedule: &Schedule, t: Timestamp, n: usize) -> Vec<Occurrence> {
        self.search(schedule, t, |found: &[Upcoming]| {
            found.iter().filter(|u| u.skipped_by.is_none()).count() >= n
        })
        .into_iter()
        .filter(|u| u.skipped_by.is_none())
        .take(n)
        .map(|u| u.occurrence)
        .collect()
    }

    /// The occurrences after `t`, skipped ones included, until `n` that happen.
    pub fn upcoming(&self, schedule: &Schedule, t: Timestamp, n: usize) -> Vec<Upcoming> {
        self.search(schedule, t, |found: &[Upcoming]| {
            found.iter().filter(|u| u.skipped_by.is_none()).count() >= n
        })
        .into_iter()
        .scan(0, |happening, u| {
            if *happening >= n {
                return None;
            }
            *happening += usize::from(u.skipped_by.is_none());
            Some(u)
        })
        .collect()
    }

    /// The skipped occurrences from the one in force at `t` (if skipped) up to the next
    /// one that happens, at most `cap`: what a window's status lists.
    pub fn skipped_until_next(
        &self,
        schedule: &Schedule,
        t: Timestamp,
        cap: usize,
    ) -> Vec<Upcoming> {
        let current = schedule.active_at(t).and_then(|o| {
            self.skipping(&o).map(|e| Upcoming {
                occurrence: o,
                skipped_by: Some(e.clone()),
            })
        });
        current
            .into_iter()
            .chain(self.upcoming(schedule, t, 1))
            .filter(|u| u.skipped_by.is_some())
            .take(cap)
            .collect()
    }

    fn search(
        &self,
        schedule: &Schedule,
        t: Timestamp,
        done: impl Fn(&[Upcoming]) -> bool,
    ) -> Vec<Upcoming> {
        let mut found: Vec<Upcoming> = Vec::new();
        let mut cursor = t;
        for _ in 0..MAX_BATCHES {
            let batch = schedule.next_after(cursor, BATCH);
            let Some(last) = batch.last() else { break };
            cursor = last.start;
            let exhausted = batch.len() < BATCH;
            found.extend(batch.into_iter().map(|o| Upcoming {
                skipped_by: self.skipping(&o).cloned(),
                occurrence: o,
            }));
            if done(&found) || exhausted {
                break;
            }
        }
        found
    }
}

#[derive(Default)]
struct Errors(ValidationErrors);

impl Errors {
    fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.0.push(FieldError {
            field: field.to_string(),
            message: message.into(),
        });
    }
}

/// Reads a bound: an RFC 3339 time, or a date meaning the start of that day in `zone`
/// (`end_of_day`: the start of the day after, so the date itself is excluded whole).
fn parse_bound(text: &str, zone: &TimeZone, end_of_day: bool) -> Result<Timestamp, String> {
    if let Ok(t) = Timestamp::from_str(text) {
        return Ok(t);
    }
    // Only a bare date: jiff would also read "2026-12-25T10:00:00" as a date, dropping a
    // time that was meant (without its offset).
    let bare = text.trim();
    let date = (bare.len() == 10).then(|| Date::from_str(bare).ok()).flatten().ok_or_else(|| {
        format!("{text:?} is neither an RFC 3339 time with an offset (2026-12-24T00:00:00Z) nor a date (2026-12-24)")
    })?;
    let day = if end_of_day {
        date.tomorrow().map_err(|e| format!("{text:?}: {e}"))?
    } else {
        date
    };
    day.to_zoned(zone.clone())
        .map(|z| z.timestamp())
        .map_err(|e| format!("{text:?}: {e}"))
}

/// Every problem with `specs`, field by field, or the exclusions they describe. `zone` is
/// the window's (dates are read in it); `recurring` is false for a one-off window, which
/// takes none.
pub fn parse(
    specs: &[ExclusionSpec],
    zone: &TimeZone,
    recurring: bool,
) -> Result<Exclusions, ValidationErrors> {
    let mut errors = Errors::default();
    if specs.is_empty() {
        return Ok(Exclusions::default());
    }
    if !recurring {
        errors.push(
            "spec.exclusions",
            "apply to recurring windows (schedule) only; a one-off window is skipped by deleting it or setting suspend: true",
        );
        return Err(errors.0);
    }
    if specs.len() > MAX_EXCLUSIONS {
        errors.push(
            "spec.exclusions",
            format!(
                "has {} entries; at most {MAX_EXCLUSIONS} (remove those that are over)",
                specs.len()
            ),
        );
        return Err(errors.0);
    }
    let mut list = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let at = |field: &str| format!("spec.exclusions[{i}].{field}");
        let start = parse_bound(&spec.start, zone, false)
            .map_err(|e| errors.push(&at("start"), e))
            .ok();
        let end = parse_bound(&spec.end, zone, true)
            .map_err(|e| errors.push(&at("end"), e))
            .ok();
        if let Some(reason) = &spec.reason
            && reason.chars().count() > MAX_REASON_CHARS
        {
            errors.push(
                &at("reason"),
                format!(
                    "is {} characters; at most {MAX_REASON_CHARS}",
                    reason.chars().count()
                ),
            );
        }
        if let (Some(start), Some(end)) = (start, end) {
            if end <= start {
                errors.push(
                    &at("end"),
                    format!("{:?} is not after start {:?}", spec.end, spec.start),
                );
                continue;
            }
            list.push(Exclusion {
                start,
                end,
                reason: spec.reason.clone().filter(|r| !r.trim().is_empty()),
            });
        }
    }
    if errors.0.0.is_empty() {
        Ok(Exclusions(list))
    } else {
        Err(errors.0)
    }
}

/// The exclusion that skips exactly `occurrence` of `schedule`: its own interval. Refused
/// when occurrences overlap each other (a duration longer than the gap between starts),
/// since any exclusion skipping this one would skip a neighbour too.
pub fn covering(
    schedule: &Schedule,
    occurrence: Occurrence,
    reason: Option<String>,
) -> Result<Exclusion, String> {
    let exclusion = Exclusion {
        start: occurrence.start,
        end: occurrence.end,
        reason,
    };
    let length = occurrence.end.duration_since(occurrence.start);
    let from = occurrence
        .start
        .checked_sub(length)
        .and_then(|t| t.checked_sub(SignedDuration::from_secs(1)))
        .map_err(|e| e.to_string())?;
    let neighbours = schedule
        .next_after(from, 8)
        .into_iter()
        .filter(|o| *o != occurrence && o.start < occurrence.end)
        .any(|o| exclusion.overlaps(&o));
    if neighbours {
        return Err(format!(
            "the occurrences of this window overlap (each lasts longer than the gap between starts), so skipping the one at {} would skip its neighbours too",
            occurrence.start
        ));
    }
    Ok(exclusion)
}

/// The occurrence `lifeguard maintenance skip --on DAY` means: the one that starts on that
/// calendar day in the window's time zone, when there is exactly one.
pub fn starting_on(schedule: &Schedule, zone: &TimeZone, day: Date) -> Result<Occurrence, String> {
    let from = day
        .to_zoned(zone.clone())
        .map_err(|e| e.to_string())?
        .timestamp();
    let until = day
        .tomorrow()
        .and_then(|d| d.to_zoned(zone.clone()))
        .map_err(|e| e.to_string())?
        .timestamp();
    let just_before = from
        .checked_sub(SignedDuration::from_nanos(1))
        .map_err(|e| e.to_string())?;
    let on_day: Vec<Occurrence> = schedule
        .next_after(just_before, 3)
        .into_iter()
        .filter(|o| o.start < until)
        .collect();
    match on_day.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!("no occurrence starts on {day}")),
        several => Err(format!(
            "{}{} occurrences start on {day}; name one by its start time (--on {})",
            several.len(),
            if several.len() >= 3 { " or more" } else { "" },
            several[0].start
        )),
    }
}

impl MaintenanceWindowSpec {
    /// The parsed `spec.exclusions` (dates read in `spec.timeZone`), or what is wrong with
    /// them. An unknown zone is reported by `schedule`; dates are then read in UTC.
    pub fn exclusions(&self) -> Result<Exclusions, ValidationErrors> {
        let zone = self.zone();
        let one_off_only = (self.start.is_some() || self.end.is_some())
            && self.schedule.is_none()
            && self.duration.is_none();
        crate::exclusion::parse(&self.exclusions, &zone, !one_off_only)
    }

    /// The IANA zone the schedule is read in (UTC when absent or unknown).
    pub fn zone(&self) -> TimeZone {
        self.time_zone
            .as_deref()
            .and_then(|name| jiff::tz::db().get(name).ok())
            .unwrap_or(TimeZone::UTC)
    }
}

#[cfg(test)]
#[path = "exclusion_tests.rs"]
mod exclusion_tests;
