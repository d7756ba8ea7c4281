//! What the checks share with the endpoints and the Node reporter.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::node::Published;
use crate::verdict::{Check, Judge, Outcome, Verdict};

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
        let before = self.verdict();
        self.verdict
            .store(judgement.verdict.to_u8(), Ordering::Release);
        self.metrics.set_verdict(judgement.verdict);
        if before != judgement.verdict {
            tracing::info!(verdict = judgement.verdict.as_str(), message = %judgement.message, "verdict changed");
        }
        self.has_run[check as usize].store(true, Ordering::Release);
        let started = self.has_run.iter().all(|r| r.load(Ordering::Acquire));
        self.ready.store(started, Ordering::Release);
        self.published.send_if_modified(|p| {
            let next = Published { started, judgement };
            let changed = *p != next;
            *p = next;
            changed
        });
    }

    pub fn status_json(&self) -> Value {
        let judge = self.judge.lock().unwrap_or_else(PoisonError::into_inner);
        let judgement = judge.judge();
        json!({
            "node": self.node,
            "verdict": judgement.verdict,
            "message": judgement.message,
            "ready": self.ready(),
            "failureThreshold": judge.threshold(),
            "settings": self.settings,
            "checks": {
                "volume": judge.state(Check::Volume),
                "container": judge.state(Check::Container),
            },
        })
    }
}
