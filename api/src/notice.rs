//! Advance notice of a drain: which coming occurrence a workspace is told of, and when that
//! answer next changes. Pure; the controller writes the result to the Workspace and its pod.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::schedule::Occurrence;
use crate::window::CompiledWindow;
pub use crate::workspace::MaintenanceNotice;

impl CompiledWindow {
    /// The occurrence this window gives notice of at `t`: from `notice` before a drain
    /// occurrence opens until it is over. None for a window without notice, without drain,
    /// suspended, or not enforced (a `Warn` or `DryRun` window stops nobody).
    pub fn noticed_occurrence(&self, t: Timestamp) -> Option<Occurrence> {
        let notice = self
            .notice
            .filter(|_| self.drain && !self.suspend && self.enforces())?;
        if let Some(active) = self.active_at(t) {
            return Some(active);
        }
        let next = *self.next_after(t, 1).first()?;
        let from = next.start.checked_sub(notice).ok()?;
        (from <= t).then_some(next)
    }

    /// The next instant after `t` at which `noticed_occurrence` may change its answer.
    pub fn next_notice_change(&self, t: Timestamp) -> Option<Timestamp> {
        let notice = self
            .notice
            .filter(|_| self.drain && !self.suspend && self.enforces())?;
        if let Some(o) = self.noticed_occurrence(t) {
            return Some(o.end);
        }
        let next = *self.next_after(t, 1).first()?;
        next.start.checked_sub(notice).ok().filter(|from| *from > t)
    }
}

/// Whether a window with `spec` can ever notify a workspace: it drains, gives notice, is
/// enforced and not suspended. The same conditions `noticed_occurrence` checks, on the
/// uncompiled spec, so a watcher can tell which window changes may move a notice.
pub fn may_give_notice(spec: &crate::MaintenanceWindowSpec) -> bool {
    spec.notice.is_some() && spec.drain && !spec.suspend && spec.enforcement.is_enforce()
}

/// The notice a workspace with `workspace_labels` in a namespace with `namespace_labels`
/// carries at `t`: of the covering windows giving notice, the one that opens first (then by
/// name, so the answer is stable).
pub fn notice_for<'a>(
    windows: impl IntoIterator<Item = &'a CompiledWindow>,
    namespace_labels: &BTreeMap<String, String>,
    workspace_labels: &BTreeMap<String, String>,
    t: Timestamp,
) -> Option<MaintenanceNotice> {
    windows
        .into_iter()
        .filter(|w| w.covers(namespace_labels, workspace_labels))
        .filter_map(|w| w.noticed_occurrence(t).map(|o| (o, w)))
        .min_by(|(a, wa), (b, wb)| a.start.cmp(&b.start).then(wa.name.cmp(&wb.name)))
        .map(|(o, w)| MaintenanceNotice {
            window: w.name.clone(),
            start: Time(o.start),
            end: Time(o.end),
            message: w.message.clone(),
        })
}

/// When any of `windows` next changes whom it notifies: the controller looks again then.
pub fn next_change<'a>(
    windows: impl IntoIterator<Item = &'a CompiledWindow>,
    t: Timestamp,
) -> Option<Timestamp> {
    windows
        .into_iter()
        .filter_map(|w| w.next_notice_change(t))
        .min()
}

#[cfg(test)]
#[path = "notice_tests.rs"]
mod notice_tests;
