//! Which watch events of a workspace pod are the echoes of the reconciler's own writes of
//! it. Pure; `pod_names` applies it to the watch.
//!
//! A reconcile that writes a pod (creates, deletes or releases it) plans again, in the same
//! reconcile, with what the write returned (`workspace::reconcile`). The watch event each
//! write causes then tells the reconciler nothing new, yet cost a reconcile and its two
//! reads: at a drain, three of a stop's five reconciles (docs/benchmarks.md, "The drain
//! without its echoes"). So those events are dropped, and only those:
//!
//! - While the reconciler writes a pod, the pod's events are held back (the echo often
//!   comes before the write's answer) and kept.
//! - When the reconcile is done with the pod it settles: every held event must be the echo
//!   of one of its writes, that is a change at a version a write returned, or the deletion
//!   of a pod a write left gone. If one is not, something else changed the pod meanwhile and
//!   the reconcile must look again at once (`Settled::LookAgain`).
//! - After that, the pod's next events at those versions, and its deletion if a write left
//!   it gone, are dropped as they come. Any other event triggers as usual and ends the
//!   expectation, so a missed echo costs one reconcile, never a lost change.
//!
//! Resource versions are only compared for equality, which is all the API promises.

use std::collections::HashMap;

/// (namespace, name) of a pod.
pub type PodKey = (String, String);

/// One watch event of a pod, as far as echoes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// The pod was added or changed, and is now at this resource version.
    Changed(Option<String>),
    /// The pod's object is gone.
    Deleted,
}

/// What one of the reconciler's writes left of the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Stored at this resource version.
    At(String),
    /// The pod's object is gone.
    Gone,
}

/// Whether a reconcile's writes explain every event held back while it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// They do (or it wrote nothing): the reconcile planned with the pod as it is.
    Clean,
    /// Something else changed the pod meanwhile: reconcile again now.
    LookAgain,
}

/// What is awaited of one pod.
#[derive(Debug, Default)]
struct Awaited {
    /// A reconcile is writing the pod and has not settled.
    writing: bool,
    /// The events that came while it wrote.
    held: Vec<Seen>,
    /// The versions its writes returned, whose events have not come yet.
    versions: Vec<String>,
    /// A write left the pod gone, and its deletion event has not come yet.
    gone: bool,
}

impl Awaited {
    /// Whether `seen` is the echo of a write; an echo is consumed.
    fn take(&mut self, seen: &Seen) -> bool {
        match seen {
            Seen::Changed(Some(version)) => match self.versions.iter().position(|v| v == version) {
                Some(at) => {
                    self.versions.remove(at);
                    true
                }
                None => false,
            },
            Seen::Changed(None) => false,
            Seen::Deleted => std::mem::replace(&mut self.gone, false),
        }
    }

    fn awaits_nothing(&self) -> bool {
        !self.writing && self.versions.is_empty() && !self.gone
    }
}

/// The echoes awaited, by pod. An entry lives from a reconcile's first write of the pod
/// until its echoes came or another event ended it.
#[derive(Debug, Default)]
pub struct Echoes(HashMap<PodKey, Awaited>);

impl Echoes {
    /// A reconcile is about to write the pod.
    pub fn writing(&mut self, key: PodKey) {
        self.0.entry(key).or_default().writing = true;
    }

    /// One of its writes of the pod succeeded.
    pub fn written(&mut self, key: &PodKey, written: Written) {
        let Some(awaited) = self.0.get_mut(key) else {
            return;
        };
        match written {
            Written::At(version) => awaited.versions.push(version),
            Written::Gone => awaited.gone = true,
        }
    }

    /// The reconcile is done with the pod. A reconcile that did not write it settles
    /// `Clean` and changes nothing.
    pub fn settle(&mut self, key: &PodKey) -> Settled {
        let Some(awaited) = self.0.get_mut(key) else {
            return Settled::Clean;
        };
        if !awaited.writing {
            return Settled::Clean;
        }
        awaited.writing = false;
        let held = std::mem::take(&mut awaited.held);
        let explained = held.iter().all(|seen| awaited.take(seen));
        if !explained {
            self.0.remove(key);
            return Settled::LookAgain;
        }
        if awaited.awaits_nothing() {
            self.0.remove(key);
        }
        Settled::Clean
    }

    /// Whether this event of the pod is dropped: held back while a reconcile writes it, or
    /// the echo of a settled reconcile's write.
    pub fn is_echo(&mut self, key: &PodKey, seen: Seen) -> bool {
        let Some(awaited) = self.0.get_mut(key) else {
            return false;
        };
        if awaited.writing {
            awaited.held.push(seen);
            return true;
        }
        if !awaited.take(&seen) {
            self.0.remove(key);
            return false;
        }
        if awaited.awaits_nothing() {
            self.0.remove(key);
        }
        true
    }

    /// The watch lists again: an echo still awaited may never come (its pod went while the
    /// watch was down), and the list's events trigger every pod anyway. Writes in flight
    /// keep their entries, to settle.
    pub fn relisting(&mut self) {
        self.0.retain(|_, awaited| awaited.writing);
    }
}

#[cfg(test)]
#[path = "pod_echoes_tests.rs"]
mod tests;
