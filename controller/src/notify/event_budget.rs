//! How often a window's Warning Events about notifications given up on are recorded. Pure.
//!
//! Each notification dropped (expired, or refused by the receiver) was one Warning Event on
//! its window. A drain sends one notification per stopped workspace, so with the receiver
//! down a drain of 1,000 recorded 1,000 Events on one window (docs/benchmarks.md): a write
//! to the API server each, and a list no one reads. As client-go's spam filter does for
//! its Events, the first drop of a kind on a window is recorded at once, and later ones at
//! most once per interval, each saying how many drops it stands for. The metric
//! (`lifeguard_controller_notifications_dropped_total`) still counts every one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The Events recorded per window and reason, and the drops held back since.
#[derive(Debug)]
pub struct EventBudget {
    every: Duration,
    by_window: HashMap<(Box<str>, &'static str), Spent>,
}

#[derive(Debug, Clone, Copy)]
struct Spent {
    /// When the last Event was recorded.
    at: Instant,
    /// Drops since, with no Event of their own.
    held: u64,
}

impl EventBudget {
    /// At most one Event per window and reason each `every`.
    pub fn new(every: Duration) -> Self {
        EventBudget {
            every,
            by_window: HashMap::new(),
        }
    }

    /// A notification of `window` was dropped for `reason` at `now`. `Some(n)`: record an
    /// Event now, standing for `n` drops (this one and those held back since the last);
    /// `None`: hold it back.
    pub fn spend(&mut self, window: &str, reason: &'static str, now: Instant) -> Option<u64> {
        let every = self.every;
        // Windows are few, but deleted ones must not stay: an entry with nothing held goes
        // once its interval is over, which is when it would let an Event through anyway.
        self.by_window
            .retain(|_, spent| spent.held > 0 || now.saturating_duration_since(spent.at) < every);
        let key = (Box::from(window), reason);
        match self.by_window.get_mut(&key) {
            Some(spent) if now.saturating_duration_since(spent.at) < every => {
                spent.held = spent.held.saturating_add(1);
                None
            }
            Some(spent) => {
                let stands_for = spent.held.saturating_add(1);
                *spent = Spent { at: now, held: 0 };
                Some(stands_for)
            }
            None => {
                self.by_window.insert(key, Spent { at: now, held: 0 });
                Some(1)
            }
        }
    }
}

/// `note` for an Event standing for `drops` drops.
pub fn with_count(note: String, drops: u64) -> String {
    match drops {
        0 | 1 => note,
        n => format!("{note} ({} more dropped since the last such Event)", n - 1),
    }
}

#[cfg(test)]
#[path = "event_budget_tests.rs"]
mod tests;
