//! The Workspace reconciler: one pod per Workspace, re-created after a kubelet rejection,
//! released only once its end is recorded. `plan` decides (pure); `reconcile` reads the
//! Workspace and its pod, asks `plan` and performs the answer.

pub mod action;
pub mod eviction;
pub mod namespace_policy;
pub mod observe;
pub mod plan;
pub mod pod_read;
pub mod pod_writes;
pub mod reconcile;
pub mod service_account_policy;
pub mod start;
pub mod start_latency;
pub mod steering;
pub mod stuck_terminating;
pub mod trigger;
