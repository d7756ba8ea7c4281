//! The background loops: each check on its own schedule, never inside a request.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::container::ContainerProbe;
use crate::mounts::StorageRule;
use crate::probe_pod::Turn;
use crate::state::Shared;
use crate::verdict::{Check, Outcome, next_delay};
use crate::volume;
use crate::watchdog::{Watchdog, Watched};

#[derive(Debug, Clone)]
pub struct Cadence {
    pub interval: Duration,
    pub retry: Duration,
}

impl Cadence {
    async fn pause(&self, outcome: &Outcome) {
        tokio::time::sleep(next_delay(outcome, self.interval, self.retry, jitter())).await;
    }
}

pub fn unix_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// A fresh random u64 from the standard library's per-instance hash keys.
pub fn nonce() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(std::time::SystemTime::now())
}

/// Uniform enough in [0, 1].
pub fn unit_random() -> f64 {
    (nonce() % 10_001) as f64 / 10_000.0
}

/// Uniform enough in [-1, 1].
fn jitter() -> f64 {
    unit_random() * 2.0 - 1.0
}

pub async fn volume_loop(
    shared: Arc<Shared>,
    root: PathBuf,
    rule: StorageRule,
    deadline: Duration,
    ttl: Duration,
    schedule: Cadence,
) {
    let mut dog = Watchdog::new("volume-check");
    let ttl_secs = ttl.as_secs() as i64;
    loop {
        let (root, rule) = (root.clone(), rule.clone());
        let (now, nonce) = (unix_now(), nonce());
        let (outcome, took) = match dog
            .run(deadline, move || {
                volume::run(&root, &rule, ttl_secs, now, nonce)
            })
            .await
        {
            Watched::Done(run, took) => {
                if run.reaped > 0 {
                    shared
                        .metrics
                        .reaped
                        .with_label_values(&["directory"])
                        .inc_by(u64::from(run.reaped));
                    tracing::info!(count = run.reaped, "reaped expired probe directories");
                }
                if let Some(error) = run.sweep_error {
                    tracing::warn!(%error, "janitor could not remove probe directories");
                }
                let outcome = match run.result {
                    Ok(()) => Outcome::Success,
                    Err(e) => Outcome::Failure(e),
                };
                (outcome, took)
            }
            // The same words for the first and every later report of one hang, so the
            // Node condition is written once.
            Watched::Overran | Watched::StillStuck(_) => (
                Outcome::Failure(format!(
                    "hung: still running past its {deadline:?} deadline"
                )),
                deadline,
            ),
            Watched::Crashed(e) => (Outcome::Unknown(e), Duration::ZERO),
        };
        shared.record(Check::Volume, outcome.clone(), took);
        schedule.pause(&outcome).await;
    }
}

pub async fn container_loop(shared: Arc<Shared>, probe: ContainerProbe, schedule: Cadence) {
    loop {
        match probe.sweep(unix_now()).await {
            Ok(0) => {}
            Ok(n) => shared
                .metrics
                .reaped
                .with_label_values(&["pod"])
                .inc_by(u64::from(n)),
            Err(error) => tracing::info!(%error, "janitor could not sweep probe pods"),
        }
        let started = Instant::now();
        let outcome = match probe.turn().await {
            Ok(Turn::Cordoned) => {
                // No run, so nothing to count: the verdict says cordoned, and the checks'
                // counts wait for the node to be uncordoned.
                shared.set_cordoned(true);
                schedule.pause(&Outcome::Success).await;
                continue;
            }
            Ok(Turn::Probe { node_uid }) => {
                shared.set_cordoned(false);
                probe.check(unix_now(), &node_uid).await
            }
            Err(why) => Outcome::Unknown(format!("reading the Node: {why}")),
        };
        shared.record(Check::Container, outcome.clone(), started.elapsed());
        schedule.pause(&outcome).await;
    }
}
