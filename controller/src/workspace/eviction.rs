//! A workspace whose pod was evicted (the webhook recorded the eviction on the Workspace,
//! `lifeguard_api::eviction`): its pod is stopped the way a drain window stops one
//! (`plan`'s stop path: graceful delete, disposal handshake, release), and once the pod is
//! gone the workspace starts again, on another node since the drained one is cordoned, or
//! stays Stopped when its `spec.onEviction` says `Stop`. Pure.

use std::collections::{HashMap, HashSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::eviction::{self, EvictionNotice, EvictionRecord, OnEviction, REASON_EVICTED};
use lifeguard_api::names::{DRAINED_BY_ANNOTATION, EVICTION_NOTICE_ANNOTATION, POD_FINALIZER};
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

use crate::pod_echoes::PodKey;
use crate::status::set_condition;

/// Event reason of an evicted workspace told of its stop.
pub const REASON_EVICTION_NOTICE: &str = "EvictionNotice";

/// The eviction that asks this very pod to stop, if one does.
pub fn stopping(ws: &Workspace, pod: &Pod) -> Option<EvictionRecord> {
    eviction::recorded_for(ws, pod.metadata.uid.as_deref())
}

/// Why an evicted pod is deleted, for the Event.
pub fn stop_cause(record: &EvictionRecord) -> String {
    format!(
        "{}; lifeguard saves it before it leaves the node",
        record.describe()
    )
}

/// What a workspace without a pod does about an eviction it has not acted on: the status
/// that restarts it (`Pending`, the pod is created next) or stops it for good (`Stopped`),
/// with `status.lastEviction` recording the eviction so it is acted on once. `None` when
/// there is nothing to do: no such eviction, the Workspace is being deleted, or a drain
/// window stopped it too (the window's stop stands, and its `resumeAfter` restarts it).
pub fn after_pod_gone(ws: &Workspace, now: Timestamp) -> Option<(WorkspaceStatus, String)> {
    if ws.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let drained = ws
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(DRAINED_BY_ANNOTATION));
    if drained {
        return None;
    }
    let record = eviction::pending(ws)?;
    let mut next = ws.status.clone().unwrap_or_default();
    let disposal = next
        .conditions
        .iter()
        .find(|c| c.type_ == condition::DISPOSAL_CONFIRMED)
        .map_or("it was stopped gracefully".to_string(), |c| {
            if c.status == "True" {
                "its work was saved".to_string()
            } else {
                format!("its work may be lost ({}: {})", c.reason, c.message)
            }
        });
    let (phase, message) = match eviction::on_eviction(ws) {
        OnEviction::Restart => (
            WorkspacePhase::Pending,
            format!(
                "{}; {disposal}, and it starts again on another node",
                record.describe()
            ),
        ),
        OnEviction::Stop => (
            WorkspacePhase::Stopped,
            format!(
                "{}; {disposal}, and it stays stopped (onEviction: Stop)",
                record.describe()
            ),
        ),
    };
    next.phase = Some(phase);
    next.pod_deletion_time = None;
    next.next_attempt_time = None;
    next.last_eviction = Some(record);
    set_condition(
        &mut next.conditions,
        condition::READY,
        false,
        REASON_EVICTED,
        &message,
        ws.metadata.generation,
        now,
    );
    Some((next, message))
}

/// Whether this pod's stop is an eviction's (not a deletion's or a drain window's, which
/// have their own budgets): only those wait for the node's eviction budget.
pub fn budgeted(ws: &Workspace, pod: &Pod) -> bool {
    let drained = ws
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(DRAINED_BY_ANNOTATION));
    ws.metadata.deletion_timestamp.is_none() && !drained && stopping(ws, pod).is_some()
}

/// Whether `pod` holds an eviction budget slot: deleted and still held by lifeguard's
/// finalizer (being saved), or told of its eviction's stop and not yet deleted (the stop
/// starts when `--eviction-notice` is over).
pub fn in_flight(pod: &Pod) -> bool {
    let held = pod
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == POD_FINALIZER));
    let noticed = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(EVICTION_NOTICE_ANNOTATION));
    held && (pod.metadata.deletion_timestamp.is_some() || noticed)
}

/// Whether another evicted pod may be stopped on a node whose workspace pods are
/// `on_node`: fewer than `budget` of them are `in_flight`.
pub fn budget_allows(on_node: &[Pod], budget: u32) -> bool {
    on_node.iter().filter(|p| in_flight(p)).count() < budget as usize
}

/// Whether another evicted pod may be stopped in the cluster while `in_flight` evicted
/// pods are (`--eviction-max-concurrent`; 0 is no limit).
pub fn cluster_budget_allows(in_flight: usize, budget: u32) -> bool {
    budget == 0 || in_flight < budget as usize
}

/// How many evicted pods are being stopped in the cluster: those the pod watch shows
/// (`cached`: told of their stop and still held by lifeguard's finalizer) and those this
/// replica told within `horizon` before `now` (`told`), which the watch may not show yet.
/// A pod in both counts once.
pub fn cluster_in_flight<'a>(
    cached: impl IntoIterator<Item = &'a PodKey>,
    told: &HashMap<PodKey, Timestamp>,
    now: Timestamp,
    horizon: SignedDuration,
) -> usize {
    let recent = |at: &Timestamp| now.duration_since(*at) < horizon;
    let mut keys: HashSet<&PodKey> = cached.into_iter().collect();
    keys.extend(told.iter().filter(|(_, at)| recent(at)).map(|(k, _)| k));
    keys.len()
}

/// What an evicted pod's stop does next (`Give` only once the budgets have a slot).
#[derive(Debug, Clone, PartialEq)]
pub enum NoticeStep {
    /// Tell the workspace (pod annotation, Event, notification); its stop starts at the
    /// notice's `stop_at`.
    Give(EvictionNotice),
    /// Told; the stop starts at this time.
    Wait(Timestamp),
    /// Told, and the notice is over (or was none): delete the pod.
    Stop,
}

/// The next step of the stop of evicted `pod` of `ws` (`record`: its eviction), with a
/// notice of `notice` before the stop. A notice the pod already carries stands as it was
/// given, so a restarted controller (or a changed flag) neither repeats nor shortens it.
pub fn notice_step(
    ws: &Workspace,
    pod: &Pod,
    record: &EvictionRecord,
    now: Timestamp,
    notice: SignedDuration,
) -> NoticeStep {
    match EvictionNotice::of(pod.metadata.annotations.as_ref()) {
        Some(given) if now < given.stop_at.0 => NoticeStep::Wait(given.stop_at.0),
        Some(_) => NoticeStep::Stop,
        None => NoticeStep::Give(EvictionNotice::new(
            record,
            eviction::on_eviction(ws),
            now,
            notice,
        )),
    }
}

/// The merge patch that puts `notice` on the pod with UID `uid`: with the UID in it, the
/// API server refuses the patch (409) if the name now holds another pod.
pub fn notice_patch(notice: &EvictionNotice, uid: Option<&str>) -> serde_json::Value {
    serde_json::json!({"metadata": {
        "uid": uid,
        "annotations": {EVICTION_NOTICE_ANNOTATION: notice.to_annotation()},
    }})
}

/// A workspace restarted after an eviction, waiting for its new pod.
pub fn restarting(status: &WorkspaceStatus) -> bool {
    status.phase == Some(WorkspacePhase::Pending) && status.last_eviction.is_some()
}

#[cfg(test)]
#[path = "eviction_tests.rs"]
mod tests;
