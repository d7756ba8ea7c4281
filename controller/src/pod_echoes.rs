//! Which watch events of a workspace pod tell its reconciler nothing new. Pure;
//! `pod_names` applies it to the watch.
//!
//! A reconcile reads its pod and, when it writes the pod (creates, deletes or releases
//! it), plans again with what the write returned, in the same reconcile
//! (`workspace::reconcile`). The watch event of a state it read, or of its own write, then
//! cost a reconcile and two reads for nothing: at a drain, three of a stop's five
//! reconciles (docs/benchmarks.md, "A stop in two reconciles"). So those events are
//! dropped, and only those:
//!
//! - While a reconcile runs, its pod's events are held back and kept.
//! - When it is done it settles: every held event must be one it knows of, that is a
//!   change to a version it read or a write returned, any event held before one at a
//!   version it read (the watch keeps their order, so the read showed it), a change to a
//!   pod one of its writes then removed (history), or that pod's deletion, or, after it
//!   read no pod, the deletion of the pod that was there. If one is not, something else
//!   changed the pod meanwhile, and the reconcile must look again at once
//!   (`Settled::LookAgain`).
//! - After that, the pod's next events at a version a write returned, those of a pod a
//!   write removed, and the deletion of a pod it read as gone while the watch still had
//!   it, are dropped as they come. Any other event triggers as usual and ends the
//!   expectation, so an echo missed costs one reconcile, never a change lost. A version
//!   only read is not awaited after the reconcile: its event may have been the one that
//!   started it.
//!
//! Resource versions are only compared for equality, which is all the API promises; a
//! removed pod is told from a new one of the same name by its UID.

use std::collections::HashMap;

/// (namespace, name) of a pod.
pub type PodKey = (String, String);

/// One watch event of a pod, as far as echoes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// The pod was added or changed, and is now at `version`.
    Changed {
        version: Option<String>,
        uid: Option<String>,
    },
    /// The pod's object is gone.
    Deleted { uid: Option<String> },
}

/// What a reconcile learned of its pod from a read or a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// Read at this resource version.
    Read(String),
    /// A write stored it at this resource version.
    Written(String),
    /// A write removed the pod with this UID, or found it removed already (a delete of
    /// exactly that pod answered "not found").
    Removed(String),
    /// Read: no pod of that name. The deletion event of the pod that was there tells the
    /// reconcile, which planned with no pod, nothing: it is awaited when the watch still
    /// had the pod (`watched`), or explained if it came while the reconcile ran.
    Absent { watched: bool },
}

/// Whether the events held back while a reconcile ran are all ones it knows of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// They are (or none came): the reconcile planned with the pod as it is.
    Clean,
    /// Something else changed the pod meanwhile: reconcile again now.
    LookAgain,
}

/// What is known and awaited of one pod.
#[derive(Debug, Default)]
struct Awaited {
    /// A reconcile runs and has not settled.
    running: bool,
    /// The events that came while it ran.
    held: Vec<Seen>,
    /// The versions it read: they explain held events only.
    read: Vec<String>,
    /// The versions its writes returned whose events have not come yet.
    written: Vec<String>,
    /// The UID of a pod a write removed, until its deletion event comes.
    removed: Option<String>,
    /// A read found no pod while the watch still had one: its deletion event, whatever its
    /// UID, is known (once).
    absent: bool,
}

impl Awaited {
    /// Whether `seen` is known: at a version written (consumed) or, while `held`, read; or
    /// an event of the removed pod (its deletion is consumed).
    fn take(&mut self, seen: &Seen, held: bool) -> bool {
        match seen {
            Seen::Changed { version, uid } => {
                if let Some(version) = version {
                    if let Some(at) = self.written.iter().position(|v| v == version) {
                        self.written.remove(at);
                        return true;
                    }
                    if held && self.read.contains(version) {
                        return true;
                    }
                }
                uid.is_some() && *uid == self.removed
            }
            Seen::Deleted { uid } => {
                if uid.is_some() && *uid == self.removed {
                    self.removed = None;
                    return true;
                }
                std::mem::take(&mut self.absent)
            }
        }
    }

    fn awaits_nothing(&self) -> bool {
        !self.running && self.written.is_empty() && self.removed.is_none() && !self.absent
    }
}

/// What is known and awaited, by pod. An entry lives from a reconcile's start until its
/// writes' echoes came or another event ended it.
#[derive(Debug, Default)]
pub struct Echoes(HashMap<PodKey, Awaited>);

impl Echoes {
    /// A reconcile of the pod's workspace starts.
    pub fn reconciling(&mut self, key: PodKey) {
        self.0.entry(key).or_default().running = true;
    }

    /// It read the pod, or a write of it succeeded.
    pub fn known(&mut self, key: &PodKey, known: Known) {
        let Some(awaited) = self.0.get_mut(key) else {
            return;
        };
        match known {
            Known::Read(version) => awaited.read.push(version),
            // A pod written now exists: a deletion still to come could be its own, so the
            // absence read before explains none (at worst one reconcile more).
            Known::Written(version) => {
                awaited.absent = false;
                awaited.written.push(version);
            }
            Known::Removed(uid) => awaited.removed = Some(uid),
            Known::Absent { watched } => {
                let held = awaited
                    .held
                    .iter()
                    .any(|seen| matches!(seen, Seen::Deleted { .. }));
                awaited.absent = watched || held;
            }
        }
    }

    /// The reconcile is done.
    pub fn settle(&mut self, key: &PodKey) -> Settled {
        let Some(awaited) = self.0.get_mut(key) else {
            return Settled::Clean;
        };
        if !awaited.running {
            return Settled::Clean;
        }
        awaited.running = false;
        let held = std::mem::take(&mut awaited.held);
        // The watch sends events in the order they happened, so one held before the event
        // of a version the reconcile read is a change that read already showed (a timer
        // started the reconcile, and the kubelet's changes came while it read).
        let read_after = held.iter().rposition(|seen| match seen {
            Seen::Changed {
                version: Some(version),
                ..
            } => awaited.read.contains(version),
            _ => false,
        });
        let mut explained = true;
        for (at, seen) in held.iter().enumerate() {
            let known = awaited.take(seen, true);
            explained &= known || read_after.is_some_and(|read| at < read);
        }
        awaited.read.clear();
        if !explained {
            self.0.remove(key);
            return Settled::LookAgain;
        }
        if awaited.awaits_nothing() {
            self.0.remove(key);
        }
        Settled::Clean
    }

    /// Whether this event of the pod is dropped: held back while a reconcile runs, or the
    /// echo of a settled reconcile's write.
    pub fn is_echo(&mut self, key: &PodKey, seen: Seen) -> bool {
        let Some(awaited) = self.0.get_mut(key) else {
            return false;
        };
        if awaited.running {
            awaited.held.push(seen);
            return true;
        }
        if !awaited.take(&seen, false) {
            self.0.remove(key);
            return false;
        }
        if awaited.awaits_nothing() {
            self.0.remove(key);
        }
        true
    }

    /// The watch lists again: an echo still awaited may never come (its pod went while the
    /// watch was down), and the list's events trigger every pod anyway. Running reconciles
    /// keep their entries, to settle.
    pub fn relisting(&mut self) {
        self.0.retain(|_, awaited| awaited.running);
    }
}

#[cfg(test)]
#[path = "pod_echoes_tests.rs"]
mod tests;
