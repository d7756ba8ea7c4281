//! Is a window drained? Read from the status the controller writes, trusted only when it
//! describes the window's current spec and current occurrence. Pure.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use kube::ResourceExt;
use lifeguard_api::drain::still_remaining;
use lifeguard_api::maintenance::condition::DRAINED;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, Workspace, WorkspacePhase};

use crate::when::{relative, rfc3339};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrainState {
    Drained,
    Draining {
        remaining: u32,
    },
    /// The controller has not reported on this spec and occurrence yet.
    Unobserved,
    NotYetOpen {
        opens: Timestamp,
    },
    /// Waiting cannot help; says why.
    Never(String),
}

pub fn drain_state(window: &MaintenanceWindow, now: Timestamp) -> DrainState {
    let compiled = match CompiledWindow::compile(window) {
        Ok(c) => c,
        Err(e) => return DrainState::Never(format!("its spec is invalid: {e}")),
    };
    if !compiled.drain {
        return DrainState::Never(
            "it does not drain (spec.drain is false; `maintenance start --drain` sets it)".into(),
        );
    }
    if compiled.suspend {
        return DrainState::Never("it is suspended".into());
    }
    let Some(occurrence) = compiled.active_at(now) else {
        return match compiled.next_after(now, 1).first() {
            Some(next) => DrainState::NotYetOpen { opens: next.start },
            None => DrainState::Never("it is over and has no later occurrence".into()),
        };
    };
    let Some(status) = &window.status else {
        return DrainState::Unobserved;
    };
    let current_spec = window.metadata.generation.is_none()
        || status.observed_generation == window.metadata.generation;
    let current_occurrence = status
        .current_occurrence
        .as_ref()
        .is_some_and(|o| o.start.0 == occurrence.start);
    if !(current_spec && current_occurrence) {
        return DrainState::Unobserved;
    }
    let condition = status
        .conditions
        .iter()
        .any(|c| c.type_ == DRAINED && c.status == "True");
    match status.workspaces_remaining {
        Some(0) if condition => DrainState::Drained,
        Some(remaining) => DrainState::Draining { remaining },
        None => DrainState::Unobserved,
    }
}

pub fn drained(window: &MaintenanceWindow, now: Timestamp) -> bool {
    drain_state(window, now) == DrainState::Drained
}

/// One progress line's content (without the time stamp).
pub fn describe(state: &DrainState, now: Timestamp) -> String {
    match state {
        DrainState::Drained => "drained: every covered workspace has stopped".into(),
        DrainState::Draining { remaining: 1 } => "1 workspace remaining".into(),
        DrainState::Draining { remaining } => format!("{remaining} workspaces remaining"),
        DrainState::Unobserved => "waiting for the controller to report drain progress".into(),
        DrainState::NotYetOpen { opens } => {
            format!(
                "not open yet; opens at {} ({})",
                rfc3339(*opens),
                relative(*opens, now)
            )
        }
        DrainState::Never(why) => why.clone(),
    }
}

/// Decides when to print a progress line: on every change, else every `period`.
#[derive(Debug)]
pub struct Progress {
    period: Duration,
    last: Option<(String, Duration)>,
}

impl Progress {
    pub fn new(period: Duration) -> Self {
        Self { period, last: None }
    }

    /// The line to print now, if any; `elapsed` counts from the start of the wait.
    pub fn update(&mut self, description: String, elapsed: Duration) -> Option<String> {
        let due = match &self.last {
            None => true,
            Some((previous, at)) => {
                *previous != description || elapsed.saturating_sub(*at) >= self.period
            }
        };
        if !due {
            return None;
        }
        let secs = jiff::SignedDuration::from_secs(elapsed.as_secs() as i64);
        let line = format!("[{}] {description}", crate::when::human(secs));
        self.last = Some((description, elapsed));
        Some(line)
    }
}

/// Covered workspaces not yet Stopped or Failed, as `namespace/name (phase)`: the rule
/// the controller counts `workspacesRemaining` by (`lifeguard_api::drain`).
pub fn remaining(
    window: &CompiledWindow,
    workspaces: &[Workspace],
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<String> {
    let mut left: Vec<String> = workspaces
        .iter()
        .filter(|ws| still_remaining(window, ws, namespace_labels))
        .map(|ws| {
            let phase = ws.status.as_ref().and_then(|s| s.phase);
            format!(
                "{}/{} ({})",
                ws.namespace().unwrap_or_default(),
                ws.name_any(),
                phase.map_or("no phase yet", WorkspacePhase::as_str)
            )
        })
        .collect();
    left.sort();
    left
}

#[cfg(test)]
#[path = "drain_tests.rs"]
mod tests;

/// Covered workspaces released during this drain (since `since`, the occurrence's start)
/// without their backup agent confirming that the work was saved, as
/// `namespace/name (reason: message)`: the ones whose work may be lost.
pub fn unconfirmed_disposals(
    window: &CompiledWindow,
    workspaces: &[Workspace],
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
    since: jiff::Timestamp,
) -> Vec<String> {
    let mut found: Vec<String> = workspaces
        .iter()
        .filter(|ws| lifeguard_api::drain::covered(window, ws, namespace_labels))
        .filter_map(|ws| {
            let c = ws.status.as_ref()?.conditions.iter().find(|c| {
                c.type_ == lifeguard_api::workspace::condition::DISPOSAL_CONFIRMED
                    && c.status == "False"
                    && c.last_transition_time.0 >= since
            })?;
            Some(format!(
                "{}/{} ({}: {})",
                ws.namespace().unwrap_or_default(),
                ws.name_any(),
                c.reason,
                c.message
            ))
        })
        .collect();
    found.sort();
    found
}
