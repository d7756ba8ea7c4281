//! "Has everything of this deleted pod stopped?" Pure. Once a pod is released (no finalizer
//! holds it) and the kubelet reports each of its containers terminated, removing its object
//! skips nothing; the kubelet itself waits longer to remove it (until it has reclaimed the
//! pod's resources and its status manager looks again, up to a 10 s sync), and a drain
//! budget counts the stop as in flight until the object is gone.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// A pod being deleted, holding no finalizer, none of whose containers (init containers
/// included) can still run: removing its object skips nothing.
///
/// A container counts as stopped when the kubelet reports it terminated, or, once the pod's
/// grace period is over (`now` at or past its deletion timestamp, which the API server sets
/// to the delete plus the grace period), waiting. Older kubelets (1.20 among them) report a
/// container they have already removed as `waiting: ContainerCreating` (without this rule,
/// released pods sat so until the kubelet's 10 s sync removed them), and a kubelet never
/// starts a container for a pod being deleted: its pod sync kills such a pod instead. A
/// container the kubelet has not reported at all, or reports running, still has to be
/// stopped by it.
pub fn nothing_left_to_stop(pod: &Pod, now: Timestamp) -> bool {
    let Some(deleted) = pod.metadata.deletion_timestamp.as_ref() else {
        return false;
    };
    let grace_over = now >= deleted.0;
    let unheld = pod.metadata.finalizers.as_ref().is_none_or(Vec::is_empty);
    let Some(status) = &pod.status else {
        return false;
    };
    let declared = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    let statuses = status.container_statuses.as_deref().unwrap_or_default();
    let waiting = |cs: &ContainerStatus| cs.state.as_ref().is_some_and(|s| s.waiting.is_some());
    let stopped = |cs: &ContainerStatus| {
        cs.state.as_ref().is_some_and(|s| s.terminated.is_some()) || (grace_over && waiting(cs))
    };
    let init_stopped = status
        .init_container_statuses
        .as_deref()
        .unwrap_or_default()
        .iter()
        .all(|cs| stopped(cs) || waiting(cs));
    unheld
        && declared > 0
        && statuses.len() == declared
        && statuses.iter().all(stopped)
        && init_stopped
}

#[cfg(test)]
#[path = "pod_ended_tests.rs"]
mod tests;
