//! The fleet guard: a prober does not taint its node while more than `--max-tainted-share`
//! of the nodes already carry lifeguard's taint. Pure.
//!
//! When many nodes fail the same check at once, the cause is almost never the nodes: a
//! bad probe image, a registry or storage backend outage, a quota, a broken rollout. A
//! taint there would only take the fleet's capacity away (as medik8s' node-healthcheck
//! stops remediating past `maxUnhealthy`). The Node condition keeps telling the truth
//! (`LifeguardProbesHealthy=False`); only the taint is held back.

use std::time::Duration;

use tokio::time::Instant;

use crate::report::TAINT_KEY;
use crate::taint::{Fleet, TaintState};
use crate::verdict::Verdict;

/// The default share: half the fleet, the line medik8s' node-healthcheck draws by default
/// (`minHealthy: 51%`). Past it, the untainted rest could not absorb the workspaces the
/// taint would steer to it, and a cause shared by that many nodes is not theirs.
pub const DEFAULT_MAX_TAINTED_SHARE: f64 = 0.5;

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

/// What the reporter does about the taint on one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaintTurn {
    /// The node already shows what this verdict asks for.
    Nothing,
    /// A new taint waits until then: its spread, or the next look after a hold.
    WaitUntil(Instant),
    /// Read the node and write what differs (a new taint asks `decide` first).
    Write,
}

/// `synced`: the verdict the node's taint was last brought in line with; `due`: when a
/// waiting taint may go ahead (None: no wait started); `spread`: this turn's random part
/// of the interval, used when a wait starts. Removing a taint, or keeping one in place,
/// never waits.
pub fn taint_turn(
    verdict: Verdict,
    synced: Option<Verdict>,
    shown: &TaintState,
    due: Option<Instant>,
    now: Instant,
    spread: Duration,
) -> TaintTurn {
    if synced == Some(verdict) {
        return TaintTurn::Nothing;
    }
    if verdict != Verdict::Unhealthy || *shown == TaintState::Applied {
        return TaintTurn::Write;
    }
    match due.unwrap_or(now + spread) {
        due if now < due => TaintTurn::WaitUntil(due),
        _ => TaintTurn::Write,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_taint_waits_for_its_spread_and_nothing_else_waits() {
        use Verdict::{Healthy as H, Unhealthy as X, Unknown as Q};
        let now = Instant::now();
        let s = Duration::from_secs;
        let held = TaintState::HeldBack {
            fleet: Fleet {
                nodes: 4,
                tainted: 3,
            },
            why: "held".into(),
        };
        // (what it shows, verdict, synced, shown, due, spread, turn)
        let cases = [
            (
                "in line: nothing",
                X,
                Some(X),
                TaintState::Applied,
                None,
                s(9),
                TaintTurn::Nothing,
            ),
            (
                "healthy again: remove at once",
                H,
                Some(X),
                TaintState::Applied,
                None,
                s(9),
                TaintTurn::Write,
            ),
            (
                "unknown: sync the label at once",
                Q,
                None,
                TaintState::Unknown,
                None,
                s(9),
                TaintTurn::Write,
            ),
            (
                "newly unhealthy: wait the spread",
                X,
                Some(H),
                TaintState::Clear,
                None,
                s(9),
                TaintTurn::WaitUntil(now + s(9)),
            ),
            (
                "a zero spread goes ahead",
                X,
                Some(H),
                TaintState::Clear,
                None,
                s(0),
                TaintTurn::Write,
            ),
            (
                "the wait started keeps its time",
                X,
                Some(H),
                TaintState::Pending,
                Some(now + s(3)),
                s(9),
                TaintTurn::WaitUntil(now + s(3)),
            ),
            (
                "the wait is over",
                X,
                Some(H),
                TaintState::Pending,
                Some(now),
                s(9),
                TaintTurn::Write,
            ),
            (
                "held back: wait for the next look",
                X,
                None,
                held.clone(),
                Some(now + s(300)),
                s(9),
                TaintTurn::WaitUntil(now + s(300)),
            ),
            (
                "held back: time for the next look",
                X,
                None,
                held,
                Some(now - s(1)),
                s(9),
                TaintTurn::Write,
            ),
            (
                "already tainted (a restart): no wait",
                X,
                None,
                TaintState::Applied,
                None,
                s(9),
                TaintTurn::Write,
            ),
        ];
        for (name, verdict, synced, shown, due, spread, want) in cases {
            assert_eq!(
                taint_turn(verdict, synced, &shown, due, now, spread),
                want,
                "{name}"
            );
        }
    }

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
