use super::*;

fn fleet(nodes: u64, tainted: u64) -> Option<Fleet> {
    Some(Fleet { nodes, tainted })
}

#[test]
fn the_first_healthy_verdict_proves_the_node_and_the_guard_releases_a_held_fleet() {
    use Verdict::{Healthy as H, Unhealthy as X, Unknown as Q};
    // (case, tainted, verdict, fleet, expected)
    let cases: Vec<(&str, bool, Verdict, Option<Fleet>, &str)> = vec![
        ("not tainted: nothing", false, H, None, "Keep"),
        ("healthy: proven", true, H, None, "Proven"),
        ("no verdict yet: keep", true, Q, None, "Keep"),
        (
            "cordoned before it passed: keep",
            true,
            Verdict::Cordoned,
            None,
            "Keep",
        ),
        (
            "unhealthy: count the fleet first",
            true,
            X,
            None,
            "CountFleet",
        ),
        (
            "unhealthy, few unproven: keep",
            true,
            X,
            fleet(10, 2),
            "Keep",
        ),
        (
            "unhealthy, exactly half: keep",
            true,
            X,
            fleet(4, 2),
            "Keep",
        ),
        (
            "unhealthy, most unproven: released",
            true,
            X,
            fleet(4, 3),
            "Released",
        ),
        (
            "a single node never releases itself",
            true,
            X,
            fleet(1, 0),
            "Keep",
        ),
    ];
    for (case, tainted, verdict, fleet, want) in cases {
        let got = match step(tainted, verdict, fleet, 0.5) {
            UnprovenStep::Keep => "Keep".to_string(),
            UnprovenStep::CountFleet => "CountFleet".to_string(),
            UnprovenStep::Remove(UnprovenState::Proven) => "Proven".to_string(),
            UnprovenStep::Remove(UnprovenState::Released { why, .. }) => {
                assert!(
                    why.contains("3 of 4 nodes are still unproven"),
                    "{case}: {why}"
                );
                "Released".to_string()
            }
            other => format!("{other:?}"),
        };
        assert_eq!(got, want, "{case}");
    }
}

#[test]
fn only_a_settled_state_stops_looking() {
    assert!(!UnprovenState::Unknown.settled());
    assert!(!UnprovenState::Tainted.settled());
    assert!(UnprovenState::Proven.settled());
    assert!(UnprovenState::NotTainted.settled());
}
