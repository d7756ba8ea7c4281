//! What the checks share with the endpoints and the Node reporter.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::taint::{TaintState, TaintStatus};
use crate::unproven::UnprovenState;
use crate::verdict::{Check, Judge, Judgement, Outcome, Verdict};

/// What the checks publish to the reporter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// False until every check has run once: nothing is written before that.
    pub started: bool,
    pub judgement: Judgement,
}

pub struct Shared {
    pub node: String,
    /// Timing settings, shown in `/status` so readers can interpret the counts.
    pub settings: Value,
    pub metrics: Metrics,
    /// The cached verdict the liveness endpoint answers from: one atomic load per probe.
    verdict: AtomicU8,
    ready: AtomicBool,
    judge: Mutex<Judge>,
    has_run: [AtomicBool; 2],
    published: watch::Sender<Published>,
    taint: Mutex<TaintStatus>,
    unproven: Mutex<UnprovenState>,
}

impl Shared {
    pub fn new(
        node: String,
        settings: Value,
        metrics: Metrics,
        threshold: u32,
    ) -> (Self, watch::Receiver<Published>) {
        let judge = Judge::new(threshold);
        let (published, receiver) = watch::channel(Published {
            started: false,
            judgement: judge.judge(),
        });
        let shared = Self {
            node,
            settings,
            metrics,
            verdict: AtomicU8::new(Verdict::Unknown.to_u8()),
            ready: AtomicBool::new(false),
            judge: Mutex::new(judge),
            has_run: Default::default(),
            published,
            taint: Mutex::new(TaintStatus {
                enabled: false,
                max_tainted_share: 1.0,
                state: TaintState::Off,
            }),
            unproven: Mutex::new(UnprovenState::Unknown),
        };
        (shared, receiver)
    }

    pub fn verdict(&self) -> Verdict {
        Verdict::from_u8(self.verdict.load(Ordering::Acquire))
    }

    /// True once every check has run at least once.
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    pub fn record(&self, check: Check, outcome: Outcome, took: Duration) {
        let now = Timestamp::now();
        self.metrics.observe(check, &outcome, took.as_secs_f64());
        match &outcome {
            Outcome::Success => tracing::debug!(check = check.as_str(), ?took, "check passed"),
            Outcome::Failure(error) => {
                tracing::warn!(check = check.as_str(), %error, ?took, "check failed")
            }
            Outcome::Unknown(why) => {
                tracing::info!(check = check.as_str(), %why, ?took, "check inconclusive")
            }
        }
        let (judgement, failures, last_success) = {
            let mut judge = self.judge.lock().unwrap_or_else(PoisonError::into_inner);
            judge.record(check, outcome, now, took);
            let state = judge.state(check);
            (
                judge.judge(),
                state.consecutive_failures,
                state.last_success,
            )
        };
        self.metrics
            .consecutive_failures
            .with_label_values(&[check.as_str()])
            .set(i64::from(failures));
        if let Some(at) = last_success {
            self.metrics
                .last_success
                .with_label_values(&[check.as_str()])
                .set(at.as_millisecond() as f64 / 1000.0);
        }
        self.has_run[check as usize].store(true, Ordering::Release);
        self.publish(judgement);
    }

    /// Whether the node is cordoned, as the container check reads it each turn. A cordoned
    /// node counts as having run the container check, so a prober that starts on a
    /// cordoned node becomes ready (a DaemonSet rollout waits for it) and reports.
    pub fn set_cordoned(&self, cordoned: bool) {
        let judgement = {
            let mut judge = self.judge.lock().unwrap_or_else(PoisonError::into_inner);
            if judge.cordoned() == cordoned {
                return;
            }
            judge.set_cordoned(cordoned);
            judge.judge()
        };
        tracing::info!(node = %self.node, cordoned, "node cordon changed");
        if cordoned {
            self.has_run[Check::Container as usize].store(true, Ordering::Release);
        }
        self.publish(judgement);
    }

    fn publish(&self, judgement: crate::verdict::Judgement) {
        let before = self.verdict();
        self.verdict
            .store(judgement.verdict.to_u8(), Ordering::Release);
        self.metrics.set_verdict(judgement.verdict);
        if before != judgement.verdict {
            tracing::info!(verdict = judgement.verdict.as_str(), message = %judgement.message, "verdict changed");
        }
        let started = self.has_run.iter().all(|r| r.load(Ordering::Acquire));
        self.ready.store(started, Ordering::Release);
        self.published.send_if_modified(|p| {
            let next = Published { started, judgement };
            let changed = *p != next;
            *p = next;
            changed
        });
    }

    pub fn set_taint(&self, status: TaintStatus) {
        let held = matches!(status.state, TaintState::HeldBack { .. });
        // /status first, the gauge second: whoever sees the gauge finds /status saying why.
        *self.taint.lock().unwrap_or_else(PoisonError::into_inner) = status;
        self.metrics.taint_held_back.set(i64::from(held));
    }

    pub fn set_unproven(&self, state: UnprovenState) {
        let tainted = state == UnprovenState::Tainted;
        let released = matches!(state, UnprovenState::Released { .. });
        *self.unproven.lock().unwrap_or_else(PoisonError::into_inner) = state;
        self.metrics.unproven.set(i64::from(tainted));
        self.metrics.unproven_released.set(i64::from(released));
    }

    pub fn unproven_state(&self) -> UnprovenState {
        self.unproven
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn taint_state(&self) -> TaintState {
        self.taint
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .state
            .clone()
    }

    pub fn status_json(&self) -> Value {
        let taint = self
            .taint
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let judge = self.judge.lock().unwrap_or_else(PoisonError::into_inner);
        let judgement = judge.judge();
        json!({
            "node": self.node,
            "verdict": judgement.verdict,
            "message": judgement.message,
            "ready": self.ready(),
            "failureThreshold": judge.threshold(),
            "cordoned": judge.cordoned(),
            "settings": self.settings,
            "taint": taint,
            "unproven": self.unproven_state(),
            "checks": {
                "volume": judge.state(Check::Volume),
                "container": judge.state(Check::Container),
            },
        })
    }
}
