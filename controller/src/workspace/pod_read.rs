//! Whether a reconcile must read the Workspace's pod from the API, or may take "no pod"
//! from the controller's cache of workspace pod names (`crate::pod_names`).
//!
//! At a mass start every new Workspace's first reconcile read a pod that could not exist
//! yet: one GET per start, on the path to its pod. The cache answers that instead, but only
//! where a wrong "no pod" cannot do harm: a Workspace that has never been reconciled (no
//! status) and is not being deleted, whose only possible action without a pod is to create
//! one. Should a pod of that name exist after all (the cache is behind, or a stranger's pod
//! without the workspace label took the name), the create is answered 409 and the reconcile
//! reads the pod then (`reconcile`). If an admission webhook refuses that create first (a
//! maintenance window), the refusal is recorded as for any new workspace, and the next
//! reconcile, which has a status, reads the pod and finds the name taken. Everything else
//! reads the pod fresh: the pod's state decides stops, releases and rejections, where a
//! cache that is behind could do harm.

use lifeguard_api::Workspace;

/// What the cache of workspace pod names says about one pod name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachedPod {
    /// The cache has not listed yet: it cannot tell.
    Unknown,
    /// No pod of that name carries the workspace label.
    Absent,
    /// A pod of that name carries it.
    Present,
}

/// Whether the reconcile must GET the pod.
pub fn must_read(ws: &Workspace, cached: CachedPod) -> bool {
    let never_reconciled = ws.status.is_none();
    let deleting = ws.metadata.deletion_timestamp.is_some();
    !(cached == CachedPod::Absent && never_reconciled && !deleting)
}

#[cfg(test)]
#[path = "pod_read_tests.rs"]
mod tests;
