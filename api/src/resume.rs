//! Resuming what a drain stopped, the pure part. A window with `spec.resumeAfter` that
//! drained a workspace (`names::DRAINED_BY_ANNOTATION`, with the occurrence's end in
//! `names::DRAINED_UNTIL_ANNOTATION`) restarts it once that occurrence is over: the window
//! swaps the drained marks for a request (`names::RESUME_ANNOTATION`), and the workspace
//! acts on each request once, recording it in `status.resumed`.

use jiff::Timestamp;
use kube::ResourceExt;

use crate::field_errors::ValidationErrors;
use crate::maintenance::MaintenanceWindowSpec;
use crate::names::{DRAINED_BY_ANNOTATION, DRAINED_UNTIL_ANNOTATION, RESUME_ANNOTATION};
use crate::{Workspace, WorkspacePhase};

/// The Ready condition's reason while a resumed workspace waits for its new pod.
pub const REASON_RESUMING: &str = "Resuming";

/// `spec.resumeAfter` needs `drain: true`: there is nothing to resume otherwise.
pub fn validate(spec: &MaintenanceWindowSpec) -> Result<(), ValidationErrors> {
    if spec.resume_after && !spec.drain {
        return Err(ValidationErrors::single(
            "spec.resumeAfter",
            "restarts the workspaces a drain stopped; it needs drain: true",
        ));
    }
    Ok(())
}

/// The value of the resume request for the drain of `window`'s occurrence ending `until`.
pub fn request(window: &str, until: Timestamp) -> String {
    format!("{window}/{until}")
}

/// The window and occurrence end a resume request names. Window names cannot hold `/`.
pub fn parse_request(value: &str) -> Option<(&str, Timestamp)> {
    let (window, until) = value.split_once('/')?;
    Some((window, until.parse().ok()?))
}

/// Where a workspace stands with `window`'s resume at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Drained by `window` in an occurrence that is over, Stopped: restart it with this
    /// request.
    Due(String),
    /// Asked by `window` to restart, not running yet.
    Resuming,
    /// Nothing for `window` to do.
    Untouched,
}

/// `ws` as `window` sees it at `now` (the occurrence that drained it must be over: a
/// window still draining leaves it stopped).
pub fn standing(ws: &Workspace, window: &str, now: Timestamp) -> Standing {
    if ws.metadata.deletion_timestamp.is_some() {
        return Standing::Untouched;
    }
    let annotations = ws.annotations();
    if annotations.get(DRAINED_BY_ANNOTATION).map(String::as_str) == Some(window) {
        let until = annotations
            .get(DRAINED_UNTIL_ANNOTATION)
            .and_then(|t| t.parse::<Timestamp>().ok());
        return match until {
            Some(until) if until <= now && ws.phase() == Some(WorkspacePhase::Stopped) => {
                Standing::Due(request(window, until))
            }
            _ => Standing::Untouched,
        };
    }
    let asked = annotations
        .get(RESUME_ANNOTATION)
        .filter(|v| parse_request(v).is_some_and(|(w, _)| w == window));
    match (asked, ws.phase()) {
        (Some(_), Some(WorkspacePhase::Running | WorkspacePhase::Failed)) => Standing::Untouched,
        (Some(value), Some(WorkspacePhase::Stopped))
            if ws.status.as_ref().and_then(|s| s.resumed.as_ref()) == Some(value) =>
        {
            // Acted on, started, and stopped again since: done.
            Standing::Untouched
        }
        (Some(_), _) => Standing::Resuming,
        (None, _) => Standing::Untouched,
    }
}

/// For the workspace's own reconciler: the resume request a Stopped workspace has not acted
/// on yet. A workspace a drain still marks is never restarted.
pub fn pending_request(ws: &Workspace) -> Option<&str> {
    let annotations = ws.annotations();
    if ws.metadata.deletion_timestamp.is_some()
        || annotations.contains_key(DRAINED_BY_ANNOTATION)
        || ws.phase() != Some(WorkspacePhase::Stopped)
    {
        return None;
    }
    let value = annotations.get(RESUME_ANNOTATION)?;
    parse_request(value)?;
    let acted = ws.status.as_ref().and_then(|s| s.resumed.as_ref());
    (acted != Some(value)).then_some(value.as_str())
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod resume_tests;
