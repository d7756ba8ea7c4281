//! Drain gates, the decision: given what each gate answered, the hold the status kept
//! and the time, whether the drain is held, released or let go by `maxHold`. Pure; the
//! gates are asked in `gate_answers.rs`.
//!
//! A gate that cannot be evaluated holds (draining while the backup store may be down is
//! what the gate exists to prevent), within `maxHold`. The hold's `since` lives in the
//! window's status, so a restarted controller counts `maxHold` from the same instant. It is
//! the first hold's of the occurrence: a gate that clears for a pass and holds again (a
//! tenant recreating a matching pod, a flapping alert) does not restart the clock, so the
//! holds of one occurrence together last at most `maxHold`. Once `maxHold` has let a drain
//! go, it proceeds for the rest of the occurrence: a gate that kept firing would otherwise
//! hold it again at once.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use lifeguard_api::MaintenanceWindowStatus;
use lifeguard_api::maintenance::{HoldStatus, condition};

use crate::status::set_condition;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Prometheus,
    Pods,
}

impl Gate {
    /// As in `status.hold.gate` and the metric's `gate` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Prometheus => "prometheus",
            Gate::Pods => "pods",
        }
    }

    /// As in the `DrainHeld` condition's reason.
    fn reason(self) -> &'static str {
        match self {
            Gate::Prometheus => "Prometheus",
            Gate::Pods => "Pods",
        }
    }
}

/// What one gate answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Clear,
    /// The unsafe condition holds; the message says what was found.
    Holds(String),
    /// The gate could not be asked or answered nonsense: holds too.
    Unknown(String),
}

/// The drain's hold after this pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Whether the drain starts no new stops.
    pub held: bool,
    /// What `status.hold` becomes.
    pub hold: Option<HoldStatus>,
    /// The gate whose hold `maxHold` ended on this pass: a Warning Event and a count, once.
    pub expired_now: Option<Gate>,
}

/// Decides the hold. `answers` in the order the gates are listed (the first that holds is
/// named); `kept` is `status.hold` as stored; `occurrence_start` tells a hold left from an
/// earlier occurrence, which is forgotten.
pub fn decide(
    answers: &[(Gate, Answer)],
    kept: Option<&HoldStatus>,
    occurrence_start: Timestamp,
    max_hold: Option<SignedDuration>,
    now: Timestamp,
) -> Decision {
    let kept = kept.filter(|h| h.since.0 >= occurrence_start);
    if let Some(expired) = kept.filter(|h| h.expired) {
        return Decision {
            held: false,
            hold: Some(expired.clone()),
            expired_now: None,
        };
    }
    let holding = answers.iter().find_map(|(gate, answer)| match answer {
        Answer::Clear => None,
        Answer::Holds(message) => Some((*gate, message.clone())),
        Answer::Unknown(why) => Some((*gate, format!("cannot be evaluated, so it holds: {why}"))),
    });
    let Some((gate, message)) = holding else {
        return Decision {
            held: false,
            hold: kept.map(|h| HoldStatus {
                message: "no gate holds the drain".to_string(),
                cleared: true,
                ..h.clone()
            }),
            expired_now: None,
        };
    };
    let since = kept.map_or(now, |h| h.since.0);
    let expired = max_hold.is_some_and(|max| now.duration_since(since) >= max);
    Decision {
        held: !expired,
        hold: Some(HoldStatus {
            gate: gate.as_str().to_string(),
            since: Time(since),
            message,
            expired,
            cleared: false,
        }),
        expired_now: expired.then_some(gate),
    }
}

/// Writes the decision into the status: `hold` and the `DrainHeld` condition.
/// `None` (the window is not draining, or has no gates): both go.
pub fn settle(
    status: &mut MaintenanceWindowStatus,
    decision: Option<&Decision>,
    max_hold: Option<SignedDuration>,
    generation: Option<i64>,
    now: Timestamp,
) {
    let Some(decision) = decision else {
        status.hold = None;
        status
            .conditions
            .retain(|c| c.type_ != condition::DRAIN_HELD);
        return;
    };
    status.hold = decision.hold.clone();
    let (held, reason, message) = match &decision.hold {
        None => (
            false,
            condition::REASON_GATES_CLEAR.to_string(),
            "no gate holds the drain".to_string(),
        ),
        Some(hold) if hold.cleared && !hold.expired => (
            false,
            condition::REASON_GATES_CLEAR.to_string(),
            format!(
                "no gate holds the drain; held by {} earlier this occurrence, so maxHold counts from {}",
                hold.gate, hold.since.0
            ),
        ),
        Some(hold) if hold.expired => (
            false,
            condition::REASON_MAX_HOLD_EXPIRED.to_string(),
            format!(
                "held by {} since {} for longer than maxHold ({}): the drain proceeds; {}",
                hold.gate,
                hold.since.0,
                max_hold.map_or_else(|| "-".to_string(), |d| format!("{d:#}")),
                hold.message
            ),
        ),
        Some(hold) => (
            true,
            gate_reason(&hold.gate).to_string(),
            format!(
                "held by {} since {}: {}",
                hold.gate, hold.since.0, hold.message
            ),
        ),
    };
    set_condition(
        &mut status.conditions,
        condition::DRAIN_HELD,
        held,
        &reason,
        &message,
        generation,
        now,
    );
}

fn gate_reason(gate: &str) -> &'static str {
    if gate == Gate::Prometheus.as_str() {
        Gate::Prometheus.reason()
    } else {
        Gate::Pods.reason()
    }
}

#[cfg(test)]
#[path = "hold_decision_tests.rs"]
mod hold_decision_tests;
