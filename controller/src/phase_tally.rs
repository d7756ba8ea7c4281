//! The workspaces-by-phase gauge, kept from what the reconciler reads and writes instead of
//! a list of every Workspace.
//!
//! The leader reads each Workspace fresh in every reconcile and is the only writer of its
//! status, so the phase it last read or wrote is the phase. Listing all Workspaces every
//! 30 s for the gauge cost the API server a full read of every object (about 20 MB of JSON
//! at 10,000 workspaces) and grew with the fleet; this costs no API call.
//!
//! Each Workspace is remembered by a 64-bit hash of its namespace and name (about 17 bytes
//! of table per workspace, 10,000 in under 300 KiB), never by its strings. A collision
//! would merge two workspaces' entries; at 10,000 workspaces its chance is about 3 in
//! 10^12. Entries of Workspaces no longer in the controller's cache of Workspaces (gone
//! while a watch was broken, so no reconcile saw them go) are dropped at each publish.
//! After a failover the gauge fills in as the new leader's first pass reaches each
//! Workspace: it counts only Workspaces this leader has read.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use lifeguard_api::WorkspacePhase;

/// A Workspace's identity in the tally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkspaceKey(u64);

impl WorkspaceKey {
    pub fn new(namespace: &str, name: &str) -> Self {
        // `DefaultHasher::new` has fixed keys: the same workspace hashes the same way in
        // every call, which is all the tally needs (nothing outside this process sees it).
        let mut hasher = DefaultHasher::new();
        namespace.hash(&mut hasher);
        name.hash(&mut hasher);
        Self(hasher.finish())
    }
}

/// Phase of each Workspace the leader has read, by key.
#[derive(Default)]
pub struct PhaseTally {
    phases: Mutex<HashMap<WorkspaceKey, WorkspacePhase>>,
}

impl PhaseTally {
    /// The workspace's phase as just read or written; `None` (no status yet) counts in no
    /// phase.
    pub fn note(&self, key: WorkspaceKey, phase: Option<WorkspacePhase>) {
        let mut phases = self.lock();
        match phase {
            Some(phase) => {
                phases.insert(key, phase);
            }
            None => {
                phases.remove(&key);
            }
        }
    }

    /// The workspace is gone.
    pub fn forget(&self, key: WorkspaceKey) {
        self.lock().remove(&key);
    }

    /// Drops every workspace not in `present`, then counts the rest by phase, in the order
    /// of `WorkspacePhase::ALL`.
    pub fn retain_and_count(&self, present: &HashSet<WorkspaceKey>) -> [i64; 6] {
        let mut phases = self.lock();
        phases.retain(|key, _| present.contains(key));
        count(phases.values().copied())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<WorkspaceKey, WorkspacePhase>> {
        // A panic while holding the lock leaves a map that is still consistent (every
        // operation on it is a single insert, remove or retain).
        self.phases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How many of `phases` are in each phase, in the order of `WorkspacePhase::ALL`.
pub fn count(phases: impl IntoIterator<Item = WorkspacePhase>) -> [i64; 6] {
    let mut counts = [0; 6];
    for phase in phases {
        if let Some(i) = WorkspacePhase::ALL.iter().position(|p| *p == phase) {
            counts[i] += 1;
        }
    }
    counts
}

#[cfg(test)]
#[path = "phase_tally_tests.rs"]
mod tests;
