//! "Is this pod stuck Terminating?" Pure. A workspace pod that lifeguard has released (its
//! final state recorded, its disposal done or confirmed) is the kubelet's to remove once its
//! containers have stopped. A kubelet that never confirms (one that lost track of the pod,
//! or an older one that leaves a pod whose containers never started) would leave it
//! Terminating for ever, holding its Workspace's deletion and its name. So a released pod
//! with no container running, no finalizer left, and still there `--stuck-terminating-after`
//! past its deletion timestamp (which already includes its grace period) is deleted without
//! grace. A pod whose containers still run (its node may be lost; see `node_loss`) is never
//! force-deleted here: that could run two copies of a workspace at once.
//!
//! Before any of that: a pod lifeguard released (it carries `lifeguard.dev/released`) whose
//! containers the kubelet now reports all terminated is removed at once, quietly. Releasing
//! already does this when the containers are reported stopped by then; when the kubelet
//! reports them a moment later, this is the pod event that finishes the stop, instead of
//! the kubelet's own removal seconds later (which held a drain budget's slot: issue 21).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

use lifeguard_api::names::RELEASED_ANNOTATION;

use crate::pod_ended::nothing_left_to_stop;
use crate::settings::Settings;
use crate::workspace::action::Action;

/// When the pod counts as stuck, if it is a candidate at all.
pub fn stuck_at(pod: &Pod, settings: &Settings) -> Option<Timestamp> {
    let deleted = pod.metadata.deletion_timestamp.as_ref()?.0;
    // Someone's finalizer (ours while disposal runs) still holds it: not the kubelet's
    // fault, and a force-delete would not remove it anyway.
    if pod
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| !f.is_empty())
    {
        return None;
    }
    if lifeguard_api::disposal::any_container_running(pod) {
        return None;
    }
    deleted.checked_add(settings.stuck_terminating_after).ok()
}

/// `action` is what `plan` decided for a pod; nothing to do for a deleting pod becomes a
/// removal once lifeguard released it and nothing of it runs, a force-delete once it is
/// stuck, or a wait until it would be.
pub fn check(pod: &Pod, action: Action, now: Timestamp, settings: &Settings) -> Action {
    if action != Action::Idle {
        return action;
    }
    if released_by_lifeguard(pod) && nothing_left_to_stop(pod, now) {
        return Action::RemoveStoppedPod;
    }
    let Some(at) = stuck_at(pod, settings) else {
        return action;
    };
    if now < at {
        return Action::WaitUntil(at);
    }
    let since = pod
        .metadata
        .deletion_timestamp
        .as_ref()
        .map_or(String::new(), |t| {
            t.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
        });
    Action::ForceDeletePod {
        cause: format!(
            "it was still Terminating {:#} after its grace period ended at {since}, with no \
             container running and no finalizer left: the kubelet did not confirm its end",
            settings.stuck_terminating_after
        ),
    }
}

fn released_by_lifeguard(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(RELEASED_ANNOTATION))
}

#[cfg(test)]
#[path = "stuck_terminating_tests.rs"]
mod stuck_terminating_tests;
