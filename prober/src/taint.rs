//! The node taint's types: the reporter's settings, where the taint stands (for `/status`)
//! and the fleet count its guard decides on. The checks' shared state, the fleet guard, the
//! unproven rule and the Node reporter all use these; these use none of them (only
//! `report`'s rule for which taint is lifeguard's).

use std::time::Duration;

use k8s_openapi::api::core::v1::Taint;
use serde::Serialize;

use crate::report;

/// Taint settings of the reporter.
#[derive(Debug, Clone)]
pub struct TaintPolicy {
    pub enabled: bool,
    /// See `fleet::decide`.
    pub max_share: f64,
    /// A new taint waits a random part of this (the check interval), so probers that see
    /// one fleet-wide failure at the same moment do not all count zero tainted nodes.
    pub spread: Duration,
}

/// What the guard counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fleet {
    /// Every Node in the cluster, this one included.
    pub nodes: u64,
    /// Nodes other than this one that carry lifeguard's taint.
    pub tainted: u64,
}

/// Where the node's taint stands, for `/status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum TaintState {
    /// `--taint` is not set.
    Off,
    /// Not looked at yet.
    Unknown,
    /// Absent, as the verdict asks.
    Clear,
    /// Unhealthy: the taint waits for its spread before the fleet guard is asked.
    Pending,
    Applied,
    /// Unhealthy, but the fleet guard holds the taint back; the condition still says False.
    #[serde(rename_all = "camelCase")]
    HeldBack {
        fleet: Fleet,
        why: String,
    },
}

impl TaintState {
    /// What the node's taints show.
    pub fn settled(taints: &[Taint]) -> Self {
        if taints.iter().any(report::is_ours) {
            TaintState::Applied
        } else {
            TaintState::Clear
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintStatus {
    pub enabled: bool,
    pub max_tainted_share: f64,
    #[serde(flatten)]
    pub state: TaintState,
}

impl TaintStatus {
    pub fn new(policy: &TaintPolicy) -> Self {
        Self {
            enabled: policy.enabled,
            max_tainted_share: policy.max_share,
            state: if policy.enabled {
                TaintState::Unknown
            } else {
                TaintState::Off
            },
        }
    }
}
