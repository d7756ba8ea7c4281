//! A workspace whose pod was evicted (the webhook recorded the eviction on the Workspace,
//! `lifeguard_api::eviction`): its pod is stopped the way a drain window stops one
//! (`plan`'s stop path: graceful delete, disposal handshake, release), and once the pod is
//! gone the workspace starts again, on another node since the drained one is cordoned, or
//! stays Stopped when its `spec.onEviction` says `Stop`. Pure.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::eviction::{self, EvictionRecord, OnEviction, REASON_EVICTED};
use lifeguard_api::names::{DRAINED_BY_ANNOTATION, POD_FINALIZER};
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

use crate::status::set_condition;

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

/// Whether another evicted pod may be stopped on a node whose workspace pods are
/// `on_node`: fewer than `budget` of them are being stopped (deleted, still held by
/// lifeguard's finalizer, so still being saved).
pub fn budget_allows(on_node: &[Pod], budget: u32) -> bool {
    let in_flight = on_node
        .iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_some()
                && p.metadata
                    .finalizers
                    .as_ref()
                    .is_some_and(|f| f.iter().any(|f| f == POD_FINALIZER))
        })
        .count();
    in_flight < budget as usize
}

/// A workspace restarted after an eviction, waiting for its new pod.
pub fn restarting(status: &WorkspaceStatus) -> bool {
    status.phase == Some(WorkspacePhase::Pending) && status.last_eviction.is_some()
}

#[cfg(test)]
#[path = "eviction_tests.rs"]
mod tests;
