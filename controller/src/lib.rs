//! lifeguard's controller: keeps one pod per Workspace, recovers pods the kubelet rejected
//! after scheduling, and releases the disposal finalizer only once a pod's end is recorded.

pub mod plan;
pub mod rejection;
pub mod status;

#[cfg(test)]
mod plan_tests;
