//! Postponing a drain, the pure part: a Workspace's owner asks a draining window to stop it
//! later (`names::POSTPONE_DRAIN_ANNOTATION`, a duration counted from the occurrence's
//! start), and the window grants at most its `spec.maxPostpone`, so the drain still ends by
//! the cap, inside the occurrence. The webhook refuses a request it cannot read
//! (`check_request`); the controller asks `drain_from` when to stop each workspace.

use jiff::{SignedDuration, Timestamp};

use crate::field_errors::{ValidationErrors, parse_duration};
use crate::maintenance::MaintenanceWindowSpec;
use crate::schedule::Schedule;

/// The longest postponement anyone may ask for, and the longest a window may grant: a day
/// keeps a drain a drain, not a second schedule.
pub const MAX_REQUEST: SignedDuration = SignedDuration::from_hours(24);

/// Reads an owner's request (the annotation's value): a duration above zero and at most
/// `MAX_REQUEST`, or a message saying what is wrong.
pub fn check_request(text: &str) -> Result<SignedDuration, String> {
    let mut errors = ValidationErrors::default();
    let field = crate::names::POSTPONE_DRAIN_ANNOTATION;
    let Some(asked) = parse_duration(field, text, &mut errors) else {
        return Err(errors.to_string());
    };
    if asked > MAX_REQUEST {
        return Err(format!(
            "{field}: {text:?} is longer than 24h; a drain may be postponed by at most a day"
        ));
    }
    Ok(asked)
}

/// `spec.maxPostpone` of a window with `schedule`, or every problem with it: it needs
/// `drain: true`, is at most `MAX_REQUEST`, and is shorter than an occurrence, so every
/// postponed stop still happens inside it.
pub fn compile_max(
    spec: &MaintenanceWindowSpec,
    schedule: Option<&Schedule>,
) -> Result<Option<SignedDuration>, ValidationErrors> {
    let field = "spec.maxPostpone";
    let Some(text) = spec.max_postpone.as_deref() else {
        return Ok(None);
    };
    let mut errors = ValidationErrors::default();
    let Some(max) = parse_duration(field, text, &mut errors) else {
        return Err(errors);
    };
    if !spec.drain {
        errors.push(
            field,
            "lets workspace owners postpone their drain; it needs drain: true",
        );
    }
    if max > MAX_REQUEST {
        errors.push(field, format!("{text:?} is longer than 24h"));
    }
    if let Some(length) = schedule.map(Schedule::occurrence_length)
        && max >= length
    {
        errors.push(
            field,
            format!(
                "{text:?} is not shorter than an occurrence ({length:#}): a postponed stop must still happen inside it"
            ),
        );
    }
    errors.into_result(Some(max))
}

/// When a window whose occurrence opened at `occurrence_start` stops a workspace that asks
/// for `request` (its annotation, if any), the window granting at most `max`: the start
/// itself without a request, without a cap, or for a request that cannot be read (the
/// webhook refuses those; one written before it ran drains on time).
pub fn drain_from(
    occurrence_start: Timestamp,
    request: Option<&str>,
    max: Option<SignedDuration>,
) -> Timestamp {
    let granted = match (request.map(check_request), max) {
        (Some(Ok(asked)), Some(max)) => asked.min(max),
        _ => return occurrence_start,
    };
    occurrence_start
        .checked_add(granted)
        .unwrap_or(occurrence_start)
}

#[cfg(test)]
#[path = "postpone_tests.rs"]
mod postpone_tests;
