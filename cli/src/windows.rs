//! What `maintenance status` and `maintenance next` show. Pure.
//!
//! Whether a window is active, and its occurrences, are evaluated here with the same
//! schedule code the webhook uses, so the answer is right even when the controller has
//! not written the window's status yet; drain progress can only come from that status.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use kube::ResourceExt;
use lifeguard_api::MaintenanceWindow;
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspaces_remaining: Option<u32>,
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
        workspaces_remaining: status.workspaces_remaining,
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
                    .schedule()
                    .next_after(now, 1)
                    .first()
                    .map(|o| rfc3339(o.start));
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
        let remaining = match (self.workspaces_remaining, self.drained) {
            (Some(0), true) => "0 (drained)".to_string(),
            (n, _) => or_dash(n),
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
            remaining,
            or_dash(self.workspaces_notified),
            match &self.problem {
                Some(problem) => problem.clone(),
                None => or_dash(self.message.as_ref()),
            },
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OccurrenceRow {
    pub window: String,
    pub start: String,
    pub end: String,
    /// In force at the evaluation instant (listed before the upcoming ones).
    pub in_force: bool,
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
    let current = schedule.active_at(at).map(|o| (o, true));
    let upcoming = schedule
        .next_after(at, count)
        .into_iter()
        .map(|o| (o, false));
    Ok(current
        .into_iter()
        .chain(upcoming)
        .map(|(o, in_force)| OccurrenceRow {
            window: compiled.name.clone(),
            start: rfc3339(o.start),
            end: rfc3339(o.end),
            in_force,
            extensions: extensions.clone(),
            cells: vec![
                compiled.name.clone(),
                wall_clock(o.start, &zone),
                wall_clock(o.end, &zone),
                if in_force {
                    "in force".to_string()
                } else {
                    relative(o.start, at)
                },
            ],
        })
        .collect())
}

#[cfg(test)]
#[path = "windows_tests.rs"]
mod tests;
