//! "Has everything of this deleted pod stopped?" Pure. Once a pod is released (no finalizer
//! holds it) and the kubelet reports each of its containers terminated, removing its object
//! skips nothing; the kubelet itself waits longer to remove it (until it has reclaimed the
//! pod's resources and its status manager looks again, up to a 10 s sync), and a drain
//! budget counts the stop as in flight until the object is gone.

use k8s_openapi::api::core::v1::Pod;

/// A pod being deleted, holding no finalizer, whose every container (init containers
/// included) the kubelet reports terminated: removing its object skips nothing.
pub fn nothing_left_to_stop(pod: &Pod) -> bool {
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let unheld = pod.metadata.finalizers.as_ref().is_none_or(Vec::is_empty);
    let Some(status) = &pod.status else {
        return false;
    };
    let declared = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    let statuses = status.container_statuses.as_deref().unwrap_or_default();
    let stopped = |cs: &k8s_openapi::api::core::v1::ContainerStatus| {
        cs.state.as_ref().is_some_and(|s| s.terminated.is_some())
    };
    let init_stopped = status
        .init_container_statuses
        .as_deref()
        .unwrap_or_default()
        .iter()
        .all(|cs| stopped(cs) || cs.state.as_ref().is_some_and(|s| s.waiting.is_some()));
    terminating
        && unheld
        && declared > 0
        && statuses.len() == declared
        && statuses.iter().all(stopped)
        && init_stopped
}

#[cfg(test)]
#[path = "pod_ended_tests.rs"]
mod tests;
