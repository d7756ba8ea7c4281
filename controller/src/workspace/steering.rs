//! Steering for pods created before a node-scoped window opened. The webhook keeps a
//! covered workspace pod off an active window's nodes as the pod is created
//! (`lifeguard_api::node_scope::avoid_terms`); a pod created earlier and still unscheduled
//! has no such affinity, and the scheduler may place it on a selected node after the
//! window has drained it and labelled it drained, under the upgrade that label lets in.
//! Such a pod is deleted, with no grace and no disposal wait since nothing ran in it, and
//! created again, which the webhook steers. A pod already on a node is the drain's. Pure.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::node_scope::avoids;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

use crate::status::set_condition;
use crate::workspace::action::Action;

/// `Ready` condition reason of a workspace whose unsteered pod is being replaced.
pub const REASON_RESTEERED: &str = "Resteered";

/// Whether the scheduler may still place `pod`: not deleted, no node, not ended.
pub fn unscheduled(pod: &Pod) -> bool {
    let no_node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_none_or(str::is_empty);
    let pending = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_none_or(|p| p == "Pending");
    pod.metadata.deletion_timestamp.is_none() && no_node && pending
}

/// The first window among `windows` (those that cover the workspace) that is active and
/// enforcing at `now`, limited to some nodes, and whose nodes `pod`'s required node
/// affinity does not keep it off.
pub fn unsteered_by<'a>(
    pod: &Pod,
    windows: &'a [CompiledWindow],
    now: Timestamp,
) -> Option<&'a CompiledWindow> {
    if !unscheduled(pod) {
        return None;
    }
    let terms = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|r| r.node_selector_terms.as_slice())
        .unwrap_or(&[]);
    windows.iter().find(|w| {
        w.enforces()
            && w.active_at(now).is_some()
            && w.node_label_selector
                .as_ref()
                .is_some_and(|selector| !avoids(selector, terms))
    })
}

/// When a window among `windows` next opens or changes after `now`, for an unscheduled
/// `pod`: it is looked at again then, as no watch event marks a window's scheduled start.
pub fn next_look(pod: &Pod, windows: &[CompiledWindow], now: Timestamp) -> Option<Timestamp> {
    if !unscheduled(pod) {
        return None;
    }
    windows
        .iter()
        .filter(|w| w.enforces() && w.node_label_selector.is_some())
        .filter_map(|w| w.next_change(now))
        .min()
}

/// Whether `status` says its pod is being replaced by a steered one (`step`), so that
/// once the pod is gone a new one is created rather than the workspace called stopped.
pub fn resteering(status: &WorkspaceStatus) -> bool {
    status.phase == Some(WorkspacePhase::Pending)
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == condition::READY && c.reason == REASON_RESTEERED)
}

/// The next action for a workspace that is not being stopped, about its pod `pod`, if
/// steering has one: write why the pod is replaced, delete it, release it once deleted.
/// `ours`: the pod carries lifeguard's disposal finalizer.
pub fn step(
    ws: &Workspace,
    pod: &Pod,
    windows: &[CompiledWindow],
    ours: bool,
    now: Timestamp,
) -> Option<Action> {
    let status = ws.status.clone().unwrap_or_default();
    let no_node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_none_or(str::is_empty);
    if pod.metadata.deletion_timestamp.is_some() {
        // Deleted before it was scheduled: nothing ran, so nothing waits for disposal.
        return (resteering(&status) && no_node).then_some(if ours {
            Action::ReleasePod
        } else {
            Action::Idle
        });
    }
    let window = unsteered_by(pod, windows, now)?;
    let message = format!(
        "the pod was created before maintenance window {} opened and could still be \
         scheduled onto the nodes it selects; it is created again, kept off them",
        window.name
    );
    let mut next = status.clone();
    next.phase = Some(WorkspacePhase::Pending);
    set_condition(
        &mut next.conditions,
        condition::READY,
        false,
        REASON_RESTEERED,
        &message,
        ws.metadata.generation,
        now,
    );
    if next != status {
        return Some(Action::UpdateStatus(Box::new(next)));
    }
    Some(Action::DeletePod {
        grace_seconds: Some(0),
        cause: format!(
            "it was created before maintenance window {} opened and could be scheduled onto \
             its nodes; it is created again, kept off them",
            window.name
        ),
    })
}

#[cfg(test)]
#[path = "steering_tests.rs"]
mod tests;
