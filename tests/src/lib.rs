//! Test harness for lifeguard's end-to-end tests against a real Kubernetes cluster.
//!
//! The cluster comes from `KUBECONFIG`, or else from the local cluster that
//! `cluster/lifeguard-cluster up` writes. Tests fail, never skip, when it is unreachable.

mod cluster;
mod namespace;
mod wait;

pub use cluster::{apply_crds, client, node_name, BUSYBOX_IMAGE};
pub use namespace::{NAMESPACE_LABEL, unique_name, with_namespace};
pub use wait::{wait_for, DEFAULT_TIMEOUT};
