//! What `maintenance status` and `maintenance next` show. Pure.
//!
//! Whether a window is active, and its occurrences, are evaluated here with the same
//! schedule code the webhook uses, so the answer is right even when the controller has
//! not written the window's status yet; drain progress can only come from that status.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use kube::ResourceExt;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::exclusion::{Exclusion, Upcoming};
use lifeguard_api::window::CompiledWindow;
use serde::Serialize;

use crate::output::{Tabular, or_dash};
use crate::when::{relative, rfc3339, wall_clock};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowRow {
    pub name: String,
    /// `active`, `inactive`, `suspended` or `invalid`.
    pub state: String,
    /// Why an invalid window is invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_start: Option<String>,
    pub drain: bool,
    /// `spec.enforcement`: Enforce, Warn or DryRun.
    pub enforcement: String,
    /// Warn and DryRun windows while draining: what an Enforce drain would be stopping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_drain: Option<u32>,
    /// Skipped occurrences up to the next start (evaluated here, as the status lists
    /// them), with their reasons.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspaces_remaining: Option<u32>,
    /// Of those, how many their owners postponed (`status.workspacesPostponed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspaces_postponed: Option<u32>,
    /// After an occurrence of a `resumeAfter` window: drained workspaces not running
    /// again yet (`status.workspacesResuming`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspaces_resuming: Option<u32>,
    /// While a gate holds the drain, or once maxHold let it go (`status.hold`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldRow>,
    pub drained: bool,
    /// `spec.notice`: how long before each drain workspaces are told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// From the notice until the occurrence is over: workspaces told of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspaces_notified: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip)]
    now: Timestamp,
}

/// `status.hold` as the controller wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HoldRow {
    pub gate: String,
    pub since: String,
    pub message: String,
    pub expired: bool,
}

impl HoldRow {
    /// The line `maintenance status NAME` prints under the table.
    pub fn line(&self, now: Timestamp) -> String {
        let since = with_relative(&Some(self.since.clone()), now);
        if self.expired {
            format!(
                "hold: the {} gate held the drain since {since} for maxHold; the drain proceeds: {}\n",
                self.gate, self.message
            )
        } else {
            format!(
                "held: by the {} gate since {since}: {}\n",
                self.gate, self.message
            )
        }
    }
}

pub fn window_row(window: &MaintenanceWindow, now: Timestamp) -> WindowRow {
    let status = window.status.clone().unwrap_or_default();
    let mut row = WindowRow {
        name: window.name_any(),
        state: "inactive".into(),
        problem: None,
        active: false,
        ends: None,
        next_start: None,
        drain: window.spec.drain,
        enforcement: window.spec.enforcement.as_str().to_string(),
        would_drain: status.dry_run.as_ref().map(|d| d.would_drain),
        skipped: Vec::new(),
        workspaces_remaining: status.workspaces_remaining,
        workspaces_postponed: status.workspaces_postponed,
        workspaces_resuming: status.workspaces_resuming,
        hold: status
            .hold
            .as_ref()
            .filter(|h| !h.cleared)
            .map(|h| HoldRow {
                gate: h.gate.clone(),
                since: rfc3339(h.since.0),
                message: h.message.clone(),
                expired: h.expired,
            }),
        drained: crate::drain::drained(window, now),
        notice: window.spec.notice.clone(),
        workspaces_notified: status.workspaces_notified,
        message: window.spec.message.clone().filter(|m| !m.trim().is_empty()),
        now,
    };
    match CompiledWindow::compile(window) {
        Err(errors) => {
            row.state = "invalid".into();
            row.problem = Some(errors.to_string());
        }
        Ok(compiled) => {
            let active = compiled.active_at(now);
            row.active = active.is_some();
            row.ends = active.map(|o| rfc3339(o.end));
            if compiled.suspend {
                row.state = "suspended".into();
            } else {
                row.next_start = compiled
                    .next_after(now, 1)
                    .first()
                    .map(|o| rfc3339(o.start));
                row.skipped = compiled
                    .skipped_until_next(now, 10)
                    .into_iter()
                    .map(|u| SkippedRow {
                        start: rfc3339(u.occurrence.start),
                        end: rfc3339(u.occurrence.end),
                        reason: u.skipped_by.and_then(|e| e.reason),
                    })
                    .collect();
                if row.active {
                    row.state = "active".into();
                }
            }
        }
    }
    row
}

fn with_relative(t: &Option<String>, now: Timestamp) -> String {
    match t.as_deref().map(|s| (s, s.parse::<Timestamp>())) {
        Some((s, Ok(t))) => format!("{s} ({})", relative(t, now)),
        other => or_dash(other.map(|(s, _)| s)),
    }
}

impl Tabular for WindowRow {
    fn headers() -> &'static [&'static str] {
        &[
            "NAME",
            "ACTIVE",
            "ENDS",
            "NEXT START",
            "DRAIN",
            "MODE",
            "REMAINING",
            "NOTIFIED",
            "MESSAGE",
        ]
    }

    fn cells(&self) -> Vec<String> {
        let active = match self.state.as_str() {
            "active" => "yes".to_string(),
            "inactive" => "no".to_string(),
            other => other.to_string(),
        };
        let remaining = match (self.workspaces_remaining, self.drained, &self.hold) {
            (Some(0), true, _) => "0 (drained)".to_string(),
            (Some(n), _, Some(hold)) if !hold.expired => format!("{n} (held: {})", hold.gate),
            (Some(n), _, _) if self.workspaces_postponed.is_some_and(|p| p > 0) => format!(
                "{n} ({} postponed)",
                self.workspaces_postponed.unwrap_or_default()
            ),
            (None, _, _) if self.workspaces_resuming.is_some_and(|r| r > 0) => {
                format!("{} resuming", self.workspaces_resuming.unwrap_or_default())
            }
            (n, _, _) => or_dash(n),
        };
        vec![
            self.name.clone(),
            active,
            with_relative(&self.ends, self.now),
            with_relative(&self.next_start, self.now),
            match (self.drain, &self.notice) {
                (true, Some(notice)) => format!("yes ({notice} notice)"),
                (true, None) => "yes".into(),
                (false, _) => "no".into(),
            },
            self.enforcement.clone(),
            match self.would_drain {
                Some(n) => format!("{n} (would drain)"),
                None => remaining,
            },
            or_dash(self.workspaces_notified),
            match &self.problem {
                Some(problem) => problem.clone(),
                None => or_dash(self.message.as_ref()),
            },
        ]
    }
}

/// An occurrence an exclusion skips.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedRow {
    pub start: String,
    pub end: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OccurrenceRow {
    pub window: String,
    pub start: String,
    pub end: String,
    /// In force at the evaluation instant (listed before the upcoming ones).
    pub in_force: bool,
    /// Skipped by an exclusion: it does not happen.
    pub skipped: bool,
    /// The skipping exclusion's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// Schedule syntax in use that Kubernetes CronJob does not accept (lifeguard's
    /// extensions), so a schedule copied back into a CronJob is known to fail there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(skip)]
    cells: Vec<String>,
}

impl Tabular for OccurrenceRow {
    fn headers() -> &'static [&'static str] {
        &["WINDOW", "START", "END", "STARTS"]
    }

    fn cells(&self) -> Vec<String> {
        self.cells.clone()
    }
}

/// The occurrence in force at `at` (if any), then the next `count` ones; table times on
/// the wall clock of the window's zone.
pub fn occurrences(
    window: &MaintenanceWindow,
    at: Timestamp,
    count: usize,
) -> Result<Vec<OccurrenceRow>, lifeguard_api::validation::ValidationErrors> {
    let compiled = CompiledWindow::compile(window)?;
    let zone = window
        .spec
        .time_zone
        .as_deref()
        .and_then(|z| jiff::tz::db().get(z).ok())
        .unwrap_or(TimeZone::UTC);
    let schedule = compiled.schedule();
    let extensions: Vec<String> = schedule
        .extensions()
        .iter()
        .map(ToString::to_string)
        .collect();
    // Skipped occurrences are listed too, marked, so a holiday is seen to be honoured;
    // `count` counts the ones that happen.
    // Where occurrences overlap, the one in force may be an earlier one than the latest
    // started, which is then listed after it, skipped.
    let happening = compiled.active_at(at);
    let latest = schedule.active_at(at);
    let mut current: Vec<Upcoming> = happening
        .map(|o| Upcoming {
            occurrence: o,
            skipped_by: None,
        })
        .into_iter()
        .collect();
    if let Some(o) = latest.filter(|o| Some(*o) != happening) {
        current.push(Upcoming {
            occurrence: o,
            skipped_by: skip_reason(&compiled, at),
        });
    }
    let in_force = happening.or(latest);
    let upcoming = compiled.upcoming(at, count);
    Ok(current
        .into_iter()
        .chain(upcoming)
        .map(|u| {
            let o = u.occurrence;
            let in_force = in_force == Some(o);
            let skipped = u.skipped_by.is_some();
            let skip_reason = u.skipped_by.and_then(|e| e.reason);
            OccurrenceRow {
                window: compiled.name.clone(),
                start: rfc3339(o.start),
                end: rfc3339(o.end),
                in_force,
                skipped,
                skip_reason: skip_reason.clone(),
                extensions: extensions.clone(),
                cells: vec![
                    compiled.name.clone(),
                    wall_clock(o.start, &zone),
                    wall_clock(o.end, &zone),
                    // A skipped occurrence says so where its start would be: the table
                    // keeps its columns, which scripts read.
                    match (in_force, skipped, skip_reason) {
                        (true, false, _) => "in force".to_string(),
                        (_, true, Some(reason)) => format!("skipped: {reason}"),
                        (_, true, None) => "skipped".to_string(),
                        (false, false, _) => relative(o.start, at),
                    },
                ],
            }
        })
        .collect())
}

/// The exclusion skipping the occurrence in force at `at`, if one does.
fn skip_reason(compiled: &CompiledWindow, at: Timestamp) -> Option<Exclusion> {
    compiled
        .skipped_until_next(at, 1)
        .into_iter()
        .next()
        .and_then(|u| u.skipped_by)
}

#[cfg(test)]
#[path = "windows_tests.rs"]
mod tests;
