//! The fleet guard: a prober does not taint its node while more than `--max-tainted-share`
//! of the nodes already carry lifeguard's taint. Pure.
//!
//! When many nodes fail the same check at once, the cause is almost never the nodes: a
//! bad probe image, a registry or storage backend outage, a quota, a broken rollout. A
//! taint there would only take the fleet's capacity away (as medik8s' node-healthcheck
//! stops remediating past `maxUnhealthy`). The Node condition keeps telling the truth
//! (`LifeguardProbesHealthy=False`); only the taint is held back.

use serde::Serialize;

use crate::report::TAINT_KEY;

/// The default share: half the fleet, the line medik8s' node-healthcheck draws by default
/// (`minHealthy: 51%`). Past it, the untainted rest could not absorb the workspaces the
/// taint would steer to it, and a cause shared by that many nodes is not theirs.
pub const DEFAULT_MAX_TAINTED_SHARE: f64 = 0.5;

/// What the guard counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fleet {
    /// Every Node in the cluster, this one included.
    pub nodes: u64,
    /// Nodes other than this one that carry lifeguard's taint.
    pub tainted: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaintDecision {
    Apply,
    /// The sentence for `/status`, the log and the Event.
    HoldBack(String),
}

/// Whether this node may be tainted now. "Already carries": the nodes tainted before this
/// one, so a cluster of one node, or the first nodes of a real incident, are tainted.
pub fn decide(fleet: Fleet, max_share: f64) -> TaintDecision {
    let nodes = fleet.nodes.max(1);
    // Compared as counts, so 0.5 of 4 nodes allows exactly 2 without rounding doubts.
    if (fleet.tainted as f64) <= max_share * nodes as f64 {
        return TaintDecision::Apply;
    }
    TaintDecision::HoldBack(format!(
        "taint held back: {} of {} nodes already carry {TAINT_KEY}, more than \
         --max-tainted-share {max_share} allows; so many failing at once is not this node's fault",
        fleet.tainted, nodes
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(d: &TaintDecision) -> bool {
        matches!(d, TaintDecision::HoldBack(_))
    }

    #[test]
    fn the_taint_is_held_back_past_the_share() {
        // (what it shows, nodes, tainted others, max share, held back)
        let cases = [
            ("a cluster of one node taints", 1, 0, 0.5, false),
            ("the first node of a fleet taints", 10, 0, 0.5, false),
            ("up to half already tainted still taints", 10, 5, 0.5, false),
            (
                "more than half already tainted holds back",
                10,
                6,
                0.5,
                true,
            ),
            ("exactly at the share of an even fleet", 4, 2, 0.5, false),
            ("a third of three nodes at 0.34", 3, 1, 0.34, false),
            ("two of three nodes at 0.34", 3, 2, 0.34, true),
            (
                "share 0: any other tainted node holds back",
                100,
                1,
                0.0,
                true,
            ),
            ("share 0 with none tainted taints", 100, 0, 0.0, false),
            ("share 1 never holds back", 100, 99, 1.0, false),
            ("no nodes counted is read as one", 0, 0, 0.5, false),
            ("a large fleet-wide failure", 5000, 2600, 0.5, true),
        ];
        for (name, nodes, tainted, share, want) in cases {
            let d = decide(Fleet { nodes, tainted }, share);
            assert_eq!(held(&d), want, "{name}: {d:?}");
        }
    }

    #[test]
    fn the_hold_back_says_why_in_numbers() {
        let d = decide(
            Fleet {
                nodes: 4,
                tainted: 3,
            },
            0.5,
        );
        let TaintDecision::HoldBack(why) = d else {
            panic!("3 of 4 is more than half: {d:?}")
        };
        assert!(
            why.starts_with("taint held back: 3 of 4 nodes already carry lifeguard.dev/unhealthy"),
            "{why}"
        );
        assert!(why.contains("--max-tainted-share 0.5"), "{why}");
    }
}
