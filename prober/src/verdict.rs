//! What the checks' recent results say about the node. Pure: results in, verdict out.
//!
//! Rules (see docs/prober.md):
//! - a check that failed `threshold` times in a row makes the node **unhealthy**, until it
//!   passes again; an inconclusive result (API server trouble) neither counts as a failure
//!   nor clears the count;
//! - otherwise, a check whose latest result is inconclusive, or that has not yet passed
//!   since the prober started, makes the verdict **unknown**;
//! - otherwise the node is **healthy** (a check below the threshold is not yet evidence);
//! - while the node is cordoned (`spec.unschedulable`) the container check starts no pod,
//!   and the verdict is **cordoned**, unless the volume check, which still runs, fails
//!   `threshold` times in a row. Failures counted before the cordon are kept, so a node
//!   that was unhealthy is unhealthy again when it is uncordoned, until a check passes.

use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    Volume,
    Container,
}

impl Check {
    pub const ALL: [Check; 2] = [Check::Volume, Check::Container];

    pub fn as_str(self) -> &'static str {
        match self {
            Check::Volume => "volume",
            Check::Container => "container",
        }
    }
}

/// One run of one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "error", rename_all = "lowercase")]
pub enum Outcome {
    Success,
    /// The node failed the check, including a check still running past its deadline.
    Failure(String),
    /// The check could not tell, e.g. the API server did not answer.
    Unknown(String),
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure(_) => "failure",
            Outcome::Unknown(_) => "unknown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Healthy,
    Unhealthy,
    Unknown,
    /// The node is cordoned: it is being drained, and no probe pod is started on it.
    Cordoned,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Healthy,
        Verdict::Unhealthy,
        Verdict::Unknown,
        Verdict::Cordoned,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Healthy => "healthy",
            Verdict::Unhealthy => "unhealthy",
            Verdict::Unknown => "unknown",
            Verdict::Cordoned => "cordoned",
        }
    }

    pub fn to_u8(self) -> u8 {
        self as u8
    }

    pub fn from_u8(v: u8) -> Verdict {
        match v {
            0 => Verdict::Healthy,
            1 => Verdict::Unhealthy,
            3 => Verdict::Cordoned,
            _ => Verdict::Unknown,
        }
    }
}

/// What `/status` shows per check.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckState {
    pub last: Option<Outcome>,
    pub last_run: Option<Timestamp>,
    pub last_duration_seconds: Option<f64>,
    pub consecutive_failures: u32,
    pub last_success: Option<Timestamp>,
    /// The error of the latest failure, kept across inconclusive runs.
    pub last_failure: Option<String>,
}

/// The verdict with the sentence that explains it (stable while nothing changes, so the
/// Node condition is only rewritten when something did).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub verdict: Verdict,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Judge {
    threshold: u32,
    checks: [CheckState; 2],
    cordoned: bool,
}

impl Judge {
    pub fn new(threshold: u32) -> Self {
        Self {
            threshold: threshold.max(1),
            checks: Default::default(),
            cordoned: false,
        }
    }

    /// Whether the node is cordoned, as the container check last read it.
    pub fn set_cordoned(&mut self, cordoned: bool) {
        self.cordoned = cordoned;
    }

    pub fn cordoned(&self) -> bool {
        self.cordoned
    }

    pub fn record(&mut self, check: Check, outcome: Outcome, at: Timestamp, took: Duration) {
        let state = &mut self.checks[check as usize];
        match &outcome {
            Outcome::Success => {
                state.consecutive_failures = 0;
                state.last_success = Some(at);
            }
            Outcome::Failure(error) => {
                state.consecutive_failures += 1;
                state.last_failure = Some(error.clone());
            }
            Outcome::Unknown(_) => {}
        }
        state.last = Some(outcome);
        state.last_run = Some(at);
        state.last_duration_seconds = Some(took.as_secs_f64());
    }

    pub fn state(&self, check: Check) -> &CheckState {
        &self.checks[check as usize]
    }

    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    pub fn judge(&self) -> Judgement {
        // While cordoned, only the volume check still runs; the container check's count is
        // from before the cordon and waits for the node to take pods again.
        let failing: Vec<String> = Check::ALL
            .iter()
            .filter(|c| !self.cordoned || **c == Check::Volume)
            .filter(|c| self.state(**c).consecutive_failures >= self.threshold)
            .map(|c| format!("{} check failing: {}", c.as_str(), self.last_error(*c)))
            .collect();
        if !failing.is_empty() {
            return Judgement {
                verdict: Verdict::Unhealthy,
                message: failing.join("; "),
            };
        }
        if self.cordoned {
            return Judgement {
                verdict: Verdict::Cordoned,
                message: "node cordoned (spec.unschedulable): no probe pod is started on it \
                          until it is uncordoned"
                    .into(),
            };
        }
        let unsure: Vec<String> = Check::ALL
            .iter()
            .filter_map(|c| {
                let state = self.state(*c);
                match &state.last {
                    Some(Outcome::Unknown(why)) => {
                        Some(format!("{} check inconclusive: {why}", c.as_str()))
                    }
                    _ if state.last_success.is_none() => {
                        Some(format!("{} check has not passed yet", c.as_str()))
                    }
                    _ => None,
                }
            })
            .collect();
        if !unsure.is_empty() {
            return Judgement {
                verdict: Verdict::Unknown,
                message: unsure.join("; "),
            };
        }
        Judgement {
            verdict: Verdict::Healthy,
            message: "volume and container checks pass".into(),
        }
    }

    fn last_error(&self, check: Check) -> &str {
        self.state(check)
            .last_failure
            .as_deref()
            .unwrap_or("failed")
    }
}

/// Wait before a check runs again: the interval with +-10 % jitter (so a fleet of
/// probers does not hit the API server in step), or the shorter retry interval after a
/// failure, so that `threshold` failures in a row are confirmed well within two intervals.
pub fn next_delay(outcome: &Outcome, interval: Duration, retry: Duration, jitter: f64) -> Duration {
    match outcome {
        Outcome::Failure(_) => retry.min(interval),
        _ => interval.mul_f64(1.0 + 0.1 * jitter.clamp(-1.0, 1.0)),
    }
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
