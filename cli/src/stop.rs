//! What `maintenance stop` does to a window. Pure.
//!
//! Stopping keeps the object: a one-off window that is in force gets `end` = now, so the
//! record of when it really ran stays in the cluster. Anything that cannot be ended by
//! moving `end` (a recurring window, a one-off one that has not started, or one the shorter
//! occurrence would make invalid, such as a `maxPostpone` no longer shorter than it) is
//! suspended: stopping always works.

use jiff::{SignedDuration, Timestamp};
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::schedule::Schedule;
use lifeguard_api::window::CompiledWindow;
use serde_json::{Value, json};

use crate::error::Result;
use crate::when::{rfc3339, whole_seconds};

#[derive(Debug, Clone, PartialEq)]
pub enum StopAction {
    /// Nothing to change; says why.
    Nothing(String),
    /// A merge patch of the spec, and what it did.
    Patch(Value, String),
}

pub fn stop_action(window: &MaintenanceWindow, now: Timestamp) -> Result<StopAction> {
    let compiled = CompiledWindow::compile(window)?;
    if compiled.suspend {
        return Ok(StopAction::Nothing("is already suspended".into()));
    }
    let suspend = |why: &str| {
        StopAction::Patch(
            json!({"spec": {"suspend": true}}),
            format!(
                "{why}: suspended it (resume with `kubectl patch maintenancewindow {} --type merge -p '{{\"spec\":{{\"suspend\":false}}}}'`)",
                compiled.name
            ),
        )
    };
    match compiled.schedule() {
        Schedule::Recurring(_) => Ok(suspend("is recurring")),
        Schedule::OneOff(o) if o.end <= now => Ok(StopAction::Nothing(format!(
            "already ended at {}",
            rfc3339(o.end)
        ))),
        Schedule::OneOff(o) if o.start > now => Ok(suspend(&format!(
            "had not started yet (starts at {})",
            rfc3339(o.start)
        ))),
        Schedule::OneOff(o) => {
            // The end must stay after the start for the window to remain valid.
            let end = whole_seconds(now).max(o.start + SignedDuration::from_secs(1));
            let mut ended = window.spec.clone();
            ended.end = Some(rfc3339(end));
            // Ending it now must always work: where the shorter window would break a rule
            // (a maxPostpone no longer shorter than the occurrence), it is suspended.
            if let Err(errors) = lifeguard_api::validation::validate_maintenance_window(&ended) {
                return Ok(suspend(&format!(
                    "is in force, and ending it at {} would leave it invalid ({errors})",
                    rfc3339(end)
                )));
            }
            Ok(StopAction::Patch(
                json!({"spec": {"end": rfc3339(end)}}),
                format!("ended at {}", rfc3339(end)),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn window(spec: Value) -> MaintenanceWindow {
        serde_json::from_value(json!({"metadata": {"name": "up"}, "spec": spec})).expect("window")
    }

    #[test]
    fn stop_plans() {
        let now: Timestamp = "2026-12-01T23:00:00.5Z".parse().expect("now");
        let one_off = |start: &str, end: &str| json!({"start": start, "end": end});
        let cases: Vec<(Value, Result<Value, &str>)> = vec![
            (
                one_off("2026-12-01T22:00:00Z", "2026-12-02T00:00:00Z"),
                Ok(json!({"spec": {"end": "2026-12-01T23:00:00Z"}})),
            ),
            // Started within the last second: ends one second after its start.
            (
                one_off("2026-12-01T23:00:00.2Z", "2026-12-02T00:00:00Z"),
                Ok(json!({"spec": {"end": "2026-12-01T23:00:01Z"}})),
            ),
            (
                one_off("2026-12-02T22:00:00Z", "2026-12-03T00:00:00Z"),
                Ok(json!({"spec": {"suspend": true}})),
            ),
            // 4 hours with maxPostpone 30m, stopped 10 minutes in: an end now would make a
            // 10-minute occurrence that maxPostpone no longer fits, so it is suspended.
            (
                json!({"start": "2026-12-01T22:50:00Z", "end": "2026-12-02T02:50:00Z",
                       "drain": true, "maxPostpone": "30m"}),
                Ok(json!({"spec": {"suspend": true}})),
            ),
            (
                json!({"start": "2026-12-01T21:00:00Z", "end": "2026-12-02T01:00:00Z",
                       "drain": true, "maxPostpone": "30m"}),
                Ok(json!({"spec": {"end": "2026-12-01T23:00:00Z"}})),
            ),
            (
                json!({"schedule": "0 22 * * 6", "duration": "2h"}),
                Ok(json!({"spec": {"suspend": true}})),
            ),
            (
                one_off("2026-12-01T20:00:00Z", "2026-12-01T21:00:00Z"),
                Err("already ended at 2026-12-01T21:00:00Z"),
            ),
            (
                json!({"schedule": "0 22 * * 6", "duration": "2h", "suspend": true}),
                Err("already suspended"),
            ),
        ];
        for (spec, want) in cases {
            match (stop_action(&window(spec.clone()), now), want) {
                (Ok(StopAction::Patch(patch, _)), Ok(w)) => assert_eq!(patch, w, "{spec}"),
                (Ok(StopAction::Nothing(why)), Err(part)) => {
                    assert!(why.contains(part), "{spec}: {why}")
                }
                (got, want) => panic!("{spec}: got {got:?}, want {want:?}"),
            }
        }
        let invalid = stop_action(&window(json!({"start": "soon"})), now);
        assert!(matches!(invalid, Err(Error::Invalid(_))), "{invalid:?}");
    }
}
