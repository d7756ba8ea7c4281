//! `lifeguard maintenance skip`: which occurrence to skip, and the exclusion that skips
//! exactly it. Pure; the command adds the exclusion to the window.
//!
//! The occurrence comes from the window's own schedule (daylight-saving rule included) and
//! the exclusion is its interval (`lifeguard_api::exclusion::covering`), so the webhook,
//! the controller and `maintenance next` all see that one occurrence skipped, no other.

use jiff::Timestamp;
use jiff::civil::Date;
use kube::ResourceExt;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::exclusion;
use lifeguard_api::maintenance::ExclusionSpec;
use lifeguard_api::schedule::{Occurrence, Schedule};
use lifeguard_api::window::CompiledWindow;

use crate::when::rfc3339;

/// Which occurrence `skip` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The occurrence in force now, or else the next one that happens.
    Next,
    /// The one starting on this day in the window's time zone.
    Day(Date),
    /// The one in force at this instant (its start, typically).
    At(Timestamp),
}

impl Target {
    /// `--on`: a date (`2026-12-24`) or an RFC 3339 time.
    pub fn parse_on(text: &str) -> Result<Self, String> {
        if let Ok(t) = text.parse::<Timestamp>() {
            return Ok(Self::At(t));
        }
        match text.trim().parse::<Date>() {
            Ok(day) if text.trim().len() == 10 => Ok(Self::Day(day)),
            _ => Err(format!(
                "{text:?} is neither a date (2026-12-24) nor an RFC 3339 time (2026-12-24T22:00:00Z)"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub occurrence: Occurrence,
    pub exclusion: ExclusionSpec,
    /// The exclusions to store: the window's own and the new one.
    pub exclusions: Vec<ExclusionSpec>,
}

pub const DEFAULT_REASON: &str = "skipped with lifeguard maintenance skip";

pub fn plan(
    window: &MaintenanceWindow,
    target: &Target,
    reason: Option<&str>,
    now: Timestamp,
) -> Result<Skip, String> {
    let name = window.name_any();
    let compiled = CompiledWindow::compile(window)
        .map_err(|e| format!("maintenancewindow {name:?} is invalid: {e}"))?;
    if matches!(compiled.schedule(), Schedule::OneOff(_)) {
        return Err(format!(
            "maintenancewindow {name:?} is a one-off window; only a recurring window's occurrence can be skipped (`lifeguard maintenance stop {name}` ends it)"
        ));
    }
    let schedule = compiled.schedule();
    let occurrence = match target {
        Target::Next => compiled
            .active_at(now)
            .or_else(|| compiled.next_after(now, 1).first().copied())
            .ok_or_else(|| format!("maintenancewindow {name:?} has no occurrence left to skip"))?,
        Target::Day(day) => exclusion::starting_on(schedule, &window.spec.zone(), *day)?,
        Target::At(t) => schedule
            .active_at(*t)
            .ok_or_else(|| format!("no occurrence of {name:?} is in force at {}", rfc3339(*t)))?,
    };
    if occurrence.end <= now {
        return Err(format!(
            "the occurrence from {} to {} is over",
            rfc3339(occurrence.start),
            rfc3339(occurrence.end)
        ));
    }
    let upcoming = compiled.upcoming(
        occurrence
            .start
            .checked_sub(jiff::SignedDuration::from_secs(1))
            .map_err(|e| e.to_string())?,
        1,
    );
    if let Some(by) = upcoming
        .iter()
        .find(|u| u.occurrence == occurrence)
        .and_then(|u| u.skipped_by.as_ref())
    {
        return Err(format!(
            "the occurrence from {} to {} is already skipped{}",
            rfc3339(occurrence.start),
            rfc3339(occurrence.end),
            by.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
    }
    let reason = reason
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .unwrap_or(DEFAULT_REASON);
    let covering = exclusion::covering(schedule, occurrence, Some(reason.to_string()))?;
    let new = ExclusionSpec {
        start: rfc3339(covering.start),
        end: rfc3339(covering.end),
        reason: covering.reason,
    };
    let mut exclusions = window.spec.exclusions.clone();
    exclusions.push(new.clone());
    if exclusions.len() > exclusion::MAX_EXCLUSIONS {
        return Err(format!(
            "maintenancewindow {name:?} already has {} exclusions, the most a window takes; remove those that are over",
            exclusion::MAX_EXCLUSIONS
        ));
    }
    Ok(Skip {
        occurrence,
        exclusion: new,
        exclusions,
    })
}

#[cfg(test)]
#[path = "skip_tests.rs"]
mod tests;
