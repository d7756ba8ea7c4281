//! Test harness for lifeguard's end-to-end tests against a real Kubernetes cluster.
//!
//! The cluster comes from `KUBECONFIG`, or else from the local cluster that
//! `cluster/lifeguard-cluster up` writes. Tests fail, never skip, when it is unreachable.

mod admissions;
mod cluster;
mod components;
/// Where a bench phase's CPU went, by program (`bench/cpu_tally.rs`, with the benches).
#[path = "../../bench/cpu_tally.rs"]
pub mod cpu_tally;
mod disposal_agent;
mod docs;
mod evictions;
mod local_nodes;
mod namespace;
pub mod prober;
mod quota;
mod receiver;
mod rejector;
mod repo;
mod wait;
mod windows;
mod workspace;

pub use admissions::Admissions;
pub use cluster::{
    BUSYBOX_IMAGE, LOCAL_KUBECONFIG, MetricLabels, apiserver_counter_sums, apiserver_requests,
    apply_crds, client, config as cluster_config, events_about, node_name, wait_workspace_events,
    workspace_event_reasons, workspace_event_time,
};
pub use components::{
    CONTROLLER_LEASE, Component, LIFEGUARD_NAMESPACE, arg_value, controller_leader,
    controller_series_by_label, declared_container, http_get, kill_pod, leader_and_standby,
    local_pid, metric_sum, metric_value, ops_url, pod_says_it_leads, ready_pods,
    reconciles_by_action, review_at, review_on, scale, stop_pod, wait_ready_pods,
    wait_window_enforced, wait_window_enforced_for,
};
pub use disposal_agent::{RECEIPTS_ROLE, bind_the_stand_in, receipts_agent};
pub use docs::{documented_block, run_documented};
pub use evictions::evict_once;
pub use local_nodes::{SECOND_NODE, StoppedNode, lifeguard_cluster, wait_settled};
pub use namespace::{
    E2E_NAMESPACE_LABEL, NAMESPACE_LABEL, create_usable_namespace, unique_name, with_namespace,
};
pub use quota::{allow_pods, forbid_pods};
pub use receiver::{NOTIFY_PATH, NOTIFY_RECEIVER, Received, Receiver};
pub use rejector::{Rejector, every_workspace_rejected, sleeping_workspace};
pub use repo::{repo, repo_script, without_cargo_variables};
pub use wait::{
    DEFAULT_TIMEOUT, poll_every, poll_until, wait_all_in_phase, wait_for, wait_gone, wait_phase,
};
pub use windows::{close_window, open_window, rfc3339, wait_drained, window_event_messages};
pub use workspace::{SLEEP_COMMAND, WorkspaceBuilder, workspace};
