//! Test harness for lifeguard's end-to-end tests against a real Kubernetes cluster.
//!
//! The cluster comes from `KUBECONFIG`, or else from the local cluster that
//! `cluster/lifeguard-cluster up` writes. Tests fail, never skip, when it is unreachable.

mod cluster;
mod controller_process;
mod namespace;
mod rejector;
mod wait;

pub use cluster::{BUSYBOX_IMAGE, LOCAL_KUBECONFIG, apply_crds, client, node_name};
pub use controller_process::{
    CONTROLLER_PID_FILE, LocalController, controller_binary, send_signal, spawn_controller,
};
pub use namespace::{NAMESPACE_LABEL, unique_name, with_namespace};
pub use rejector::{Rejector, sleeping_workspace};
pub use wait::{DEFAULT_TIMEOUT, wait_for, wait_gone};
