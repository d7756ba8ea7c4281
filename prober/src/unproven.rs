//! Unproven nodes take no workspaces. A node registers with lifeguard's `unproven`
//! NoSchedule taint and a label of the same key (`kubelet --register-with-taints` and
//! `--node-labels`); its prober removes both on its first healthy verdict, so no workspace
//! lands on a node before the real thing (a throwaway volume and container) has worked
//! there once. Pure: the decision; `node.rs` reads and writes the Node.
//!
//! The fleet guard applies: when more than `--max-tainted-share` of the nodes are still
//! unproven and this one is unhealthy, the cause is not the nodes (a broken probe image, a
//! storage backend down at boot), and holding them all back would leave the fleet without
//! capacity. Then an unhealthy node is released all the same, saying so (status, metric,
//! Event); its unhealthy verdict still shows in the Node condition and, within the guard of
//! its own, in the unhealthy taint.

use serde::Serialize;

use crate::taint::Fleet;
use crate::verdict::Verdict;

pub use lifeguard_api::names::NODE_UNPROVEN_KEY as UNPROVEN_KEY;

/// What `/status` shows under `unproven`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum UnprovenState {
    /// Not looked at the Node yet.
    Unknown,
    /// The node did not register as unproven (or someone removed the taint).
    NotTainted,
    /// Tainted, waiting for the first healthy verdict.
    Tainted,
    /// The first healthy verdict removed the taint.
    Proven,
    /// Removed while unhealthy, by the fleet guard.
    Released { fleet: Fleet, why: String },
}

impl UnprovenState {
    /// Nothing more to do: the kubelet adds the taint only when the Node is created.
    pub fn settled(&self) -> bool {
        matches!(
            self,
            Self::NotTainted | Self::Proven | Self::Released { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum UnprovenStep {
    Keep,
    /// Count the unproven fleet first (an unhealthy node that is still unproven).
    CountFleet,
    /// Remove the taint and the label; the state to show afterwards.
    Remove(UnprovenState),
}

/// `fleet`: the count, when the caller has one for this turn.
pub fn step(tainted: bool, verdict: Verdict, fleet: Option<Fleet>, max_share: f64) -> UnprovenStep {
    if !tainted {
        return UnprovenStep::Keep;
    }
    match (verdict, fleet) {
        (Verdict::Healthy, _) => UnprovenStep::Remove(UnprovenState::Proven),
        // No verdict yet: nothing is proven either way.
        (Verdict::Unknown, _) => UnprovenStep::Keep,
        // A node cordoned before it ever passed: nothing proven until it is uncordoned.
        (Verdict::Cordoned, _) => UnprovenStep::Keep,
        (Verdict::Unhealthy, None) => UnprovenStep::CountFleet,
        (Verdict::Unhealthy, Some(fleet)) => {
            let nodes = fleet.nodes.max(1);
            // Compared as counts, like the unhealthy taint's guard.
            if (fleet.tainted as f64) <= max_share * nodes as f64 {
                return UnprovenStep::Keep;
            }
            UnprovenStep::Remove(UnprovenState::Released {
                fleet,
                why: format!(
                    "{UNPROVEN_KEY} released although the node is unhealthy: {} of {} nodes are \
                     still unproven, more than --max-tainted-share {max_share} allows; holding \
                     them all back would leave no capacity",
                    fleet.tainted, nodes
                ),
            })
        }
    }
}

#[cfg(test)]
#[path = "unproven_tests.rs"]
mod unproven_tests;
