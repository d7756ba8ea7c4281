//! Blocking checks on a thread of their own, watched against a deadline.
//!
//! I/O on a frozen or hung filesystem blocks in the kernel and cannot be cancelled. Run on
//! the async runtime it would stall every task, the liveness endpoint included; so each run
//! gets its own thread, and the watchdog stops waiting at the deadline. A run still stuck
//! is remembered: no second run starts on top of it (that would pile up threads on a dead
//! disk), and each later attempt reports it as still hung until it finishes.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Blocking I/O needs little stack; a small one keeps a stuck thread cheap.
const STACK_BYTES: usize = 256 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub enum Watched<R> {
    /// The job finished in time.
    Done(R, Duration),
    /// The job passed its deadline and is still running.
    Overran,
    /// The job of an earlier run is still running; this run did not start one.
    StillStuck(Duration),
    /// The job panicked or its thread could not be started.
    Crashed(String),
}

pub struct Watchdog {
    name: String,
    in_flight: Option<(Instant, oneshot::Receiver<Duration>)>,
}

impl Watchdog {
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            in_flight: None,
        }
    }

    /// Whether an earlier run is still stuck (its thread has not finished).
    pub fn stuck_for(&mut self) -> Option<Duration> {
        let (started, done) = self.in_flight.as_mut()?;
        match done.try_recv() {
            Err(oneshot::error::TryRecvError::Empty) => Some(started.elapsed()),
            _ => {
                self.in_flight = None;
                None
            }
        }
    }

    pub async fn run<R, F>(&mut self, deadline: Duration, job: F) -> Watched<R>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        if let Some(since) = self.stuck_for() {
            return Watched::StillStuck(since);
        }
        let (result_tx, mut result_rx) = oneshot::channel();
        // Finishing is signalled separately from the result, so a late finish is noticed
        // after the result's receiver is gone.
        let (done_tx, done_rx) = oneshot::channel();
        let started = Instant::now();
        let spawned = std::thread::Builder::new()
            .name(self.name.clone())
            .stack_size(STACK_BYTES)
            .spawn(move || {
                let result = job();
                let _ = done_tx.send(started.elapsed());
                let _ = result_tx.send(result);
            });
        if let Err(error) = spawned {
            return Watched::Crashed(format!("cannot start a thread: {error}"));
        }
        match tokio::time::timeout(deadline, &mut result_rx).await {
            Ok(Ok(result)) => Watched::Done(result, started.elapsed()),
            Ok(Err(_)) => Watched::Crashed("the check panicked".into()),
            Err(_) => {
                self.in_flight = Some((started, done_rx));
                Watched::Overran
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[tokio::test(flavor = "current_thread")]
    async fn a_stuck_job_is_reported_without_blocking_and_not_started_twice() {
        let mut dog = Watchdog::new("test-check");
        let (release, gate) = mpsc::channel::<()>();
        let starts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = starts.clone();
        let first = dog
            .run(Duration::from_millis(50), move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = gate.recv();
                "late"
            })
            .await;
        assert_eq!(first, Watched::Overran);

        let counted = starts.clone();
        let second = dog
            .run(Duration::from_millis(50), move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                "second"
            })
            .await;
        assert!(matches!(second, Watched::StillStuck(_)), "{second:?}");
        assert_eq!(starts.load(std::sync::atomic::Ordering::SeqCst), 1);

        release.send(()).expect("the stuck job still waits");
        for _ in 0..100 {
            if dog.stuck_for().is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let third = dog.run(Duration::from_secs(5), || "fresh").await;
        assert!(matches!(third, Watched::Done("fresh", _)), "{third:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panicking_job_is_a_crash_not_a_hang() {
        let mut dog = Watchdog::new("test-panic");
        let result: Watched<()> = dog.run(Duration::from_secs(5), || panic!("boom")).await;
        assert_eq!(result, Watched::Crashed("the check panicked".into()));
        assert!(dog.stuck_for().is_none());
    }
}
