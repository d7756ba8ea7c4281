//! The disposal handshake: "may this stopped pod go?" Pure.
//!
//! Without the handshake a workspace pod is released (its disposal finalizer removed) as
//! soon as its containers have stopped. With it (the Workspace's `spec.confirmDisposal`,
//! or the controller's `--confirm-disposal` default, recorded on the pod when it is
//! created as `lifeguard.dev/disposal-confirmation: required`), the pod stays until the
//! node's backup agent answers (on the pod with `lifeguard.dev/disposal-result`, or with a
//! `DisposalReceipt` named after the pod's UID: `lifeguard_api::receipt`), or until
//! `--disposal-confirm-timeout` after its containers stopped (`agent_asked_at`). The outcome is recorded
//! first (`DisposalConfirmed` on the Workspace, an Event, and for work that may be lost a
//! counter), then the pod is released. Until then the workspace stays `Stopping`, so a
//! drain counts it as stopped only once its work is saved or the wait is over. Everything
//! lives in the API (annotations, deletion time, condition): a restarted controller
//! carries on where the last one stopped.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::Workspace;
use lifeguard_api::disposal::{self, DisposalResult};
use lifeguard_api::workspace::condition::DISPOSAL_CONFIRMED;

use crate::settings::Settings;
use crate::status::set_condition;
use crate::workspace::action::Action;

pub const REASON_SAVED: &str = "Saved";
pub const REASON_AGENT_FAILED: &str = "AgentFailed";
pub const REASON_TIMED_OUT: &str = "TimedOut";

/// The `reason` label of `lifeguard_controller_disposals_unconfirmed_total` for a
/// `DisposalConfirmed=False` condition with reason `reason`.
pub fn unconfirmed_label(reason: &str) -> &'static str {
    if reason == REASON_TIMED_OUT {
        "timed_out"
    } else {
        "agent_failed"
    }
}

/// Whether a new pod of `ws` waits for its backup agent's confirmation.
pub fn confirmation_applies(ws: &Workspace, settings: &Settings) -> bool {
    ws.spec
        .confirm_disposal
        .unwrap_or(settings.confirm_disposal)
}

/// Whether the outcome of `pod`'s disposal is still to be heard: it waits for a
/// confirmation, is being deleted, and `ws` has no outcome on record. Only then is its
/// receipt worth reading.
pub fn awaiting_answer(ws: &Workspace, pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        && disposal::confirmation_required(pod.metadata.annotations.as_ref())
        && !outcome_recorded(ws)
}

/// A workspace stops once: an outcome on record is this pod's.
fn outcome_recorded(ws: &Workspace) -> bool {
    ws.status
        .as_ref()
        .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == DISPOSAL_CONFIRMED))
}

/// When the backup agent's wait for `pod` starts (`None` while it is not being deleted):
/// once its containers have stopped, since only then is their work all on disk to save.
/// That is the pod's deletion time (the API server sets it to the request's time plus the
/// grace period, by which a kubelet keeping pace has stopped the containers), or the
/// last container's `finishedAt` when the kubelet reported them stopped later than that.
/// While a container still runs past the disposal timeout after the deletion (the longest
/// the reconciler waits for a stop before it treats the pod as stopped anyway: a lost node,
/// a runtime that hangs), the wait starts then. A stop the kubelet reports after that, but
/// before that wait is over, still gives the agent its whole wait from the stop.
///
/// Bounded at the disposal timeout plus the agent's wait after the deletion: by then a pod
/// never reported stopped has been released, so only a node whose clock runs ahead reports
/// a stop later, and it cannot hold a pod longer. Counted from the deletion time, a kubelet
/// behind its pods ate into the agent's time; bounded at the disposal timeout, a kubelet
/// lagging past it still did (a drain of 1,000 on five hollow nodes with the local
/// overlay's 30 s timeout released some workspaces `TimedOut`: docs/benchmarks.md).
pub fn agent_asked_at(pod: &Pod, settings: &Settings) -> Option<Timestamp> {
    let deleted = pod.metadata.deletion_timestamp.as_ref()?.0;
    let gave_up_on_the_stop = deleted
        .checked_add(settings.disposal_timeout)
        .unwrap_or(deleted);
    if disposal::any_container_running(pod) {
        return Some(gave_up_on_the_stop);
    }
    let latest = gave_up_on_the_stop
        .checked_add(settings.disposal_confirm_timeout)
        .unwrap_or(gave_up_on_the_stop);
    let stopped = disposal::containers_finished_at(pod);
    Some(stopped.map_or(deleted, |t| t.clamp(deleted, latest)))
}

/// The next action for a pod of `ws` whose containers have stopped (or that is overdue)
/// and that still holds our finalizer. `receipt` is the agent's answer by receipt, if it
/// gave one that belongs to this pod.
pub fn release(
    ws: &Workspace,
    pod: &Pod,
    receipt: Option<DisposalResult>,
    now: Timestamp,
    settings: &Settings,
) -> Action {
    let annotations = pod.metadata.annotations.as_ref();
    if !disposal::confirmation_required(annotations) || outcome_recorded(ws) {
        return Action::ReleasePod;
    }
    let status = ws.status.clone().unwrap_or_default();
    let asked = agent_asked_at(pod, settings).unwrap_or(now);
    let deadline = asked
        .checked_add(settings.disposal_confirm_timeout)
        .unwrap_or(asked);
    let (saved, reason, message) = match disposal::heard(disposal::result(annotations), receipt) {
        Some(DisposalResult::Saved) => (
            true,
            REASON_SAVED,
            "the backup agent confirmed that the workspace's work is saved".to_string(),
        ),
        Some(DisposalResult::Failed(why)) => (
            false,
            REASON_AGENT_FAILED,
            format!(
                "the backup agent could not save the workspace's work ({why}); the pod is released and the work may be lost"
            ),
        ),
        None if now >= deadline => (
            false,
            REASON_TIMED_OUT,
            format!(
                "no backup agent confirmed within {:#} of the pod's stop that the work is saved; the pod is released and the work may be lost",
                settings.disposal_confirm_timeout
            ),
        ),
        None => return Action::WaitUntil(deadline),
    };
    let mut next = status;
    set_condition(
        &mut next.conditions,
        DISPOSAL_CONFIRMED,
        saved,
        reason,
        &message,
        ws.metadata.generation,
        now,
    );
    Action::RecordDisposal(Box::new(next))
}

#[cfg(test)]
#[path = "disposal_tests.rs"]
mod disposal_tests;
