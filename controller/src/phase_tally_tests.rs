use super::*;
use WorkspacePhase::*;

fn key(name: &str) -> WorkspaceKey {
    WorkspaceKey::new("team-a", name)
}

fn present(names: &[&str]) -> HashSet<WorkspaceKey> {
    names.iter().map(|n| key(n)).collect()
}

#[test]
fn the_tally_follows_what_the_reconciler_read_and_wrote() {
    // (step, the counts after it: Pending, Creating, Running, Stopping, Stopped, Failed)
    type Step = fn(&PhaseTally);
    let steps: [(&str, Step, [i64; 6]); 8] = [
        (
            "a new workspace without status counts nowhere",
            |t| t.note(key("a"), None),
            [0, 0, 0, 0, 0, 0],
        ),
        (
            "its first status",
            |t| t.note(key("a"), Some(Pending)),
            [1, 0, 0, 0, 0, 0],
        ),
        (
            "a write moves it, not adds it",
            |t| t.note(key("a"), Some(Creating)),
            [0, 1, 0, 0, 0, 0],
        ),
        (
            "read again, unchanged",
            |t| t.note(key("a"), Some(Creating)),
            [0, 1, 0, 0, 0, 0],
        ),
        (
            "a second workspace",
            |t| t.note(key("b"), Some(Running)),
            [0, 1, 1, 0, 0, 0],
        ),
        (
            "the first one runs",
            |t| t.note(key("a"), Some(Running)),
            [0, 0, 2, 0, 0, 0],
        ),
        ("one is gone", |t| t.forget(key("a")), [0, 0, 1, 0, 0, 0]),
        (
            "forgetting an unknown one changes nothing",
            |t| t.forget(key("zed")),
            [0, 0, 1, 0, 0, 0],
        ),
    ];
    let tally = PhaseTally::default();
    for (what, step, want) in steps {
        step(&tally);
        assert_eq!(
            tally.retain_and_count(&present(&["a", "b"])),
            want,
            "{what}"
        );
    }
}

#[test]
fn workspaces_no_longer_cached_are_dropped_from_the_count() {
    let tally = PhaseTally::default();
    tally.note(key("kept"), Some(Running));
    tally.note(key("gone-while-the-watch-was-broken"), Some(Stopping));
    assert_eq!(
        tally.retain_and_count(&present(&["kept"])),
        [0, 0, 1, 0, 0, 0]
    );
    // Dropped for good: it does not come back when the cache is complete again.
    let both = present(&["kept", "gone-while-the-watch-was-broken"]);
    assert_eq!(tally.retain_and_count(&both), [0, 0, 1, 0, 0, 0]);
}

#[test]
fn the_same_name_in_two_namespaces_is_two_workspaces() {
    let tally = PhaseTally::default();
    let (a, b) = (
        WorkspaceKey::new("team-a", "ws"),
        WorkspaceKey::new("team-b", "ws"),
    );
    assert_ne!(a, b);
    assert_ne!(
        WorkspaceKey::new("team-a", "bws"),
        WorkspaceKey::new("team-ab", "ws"),
        "the boundary between namespace and name is part of the key"
    );
    tally.note(a, Some(Running));
    tally.note(b, Some(Failed));
    assert_eq!(tally.retain_and_count(&[a, b].into()), [0, 0, 1, 0, 0, 1]);
}

#[test]
fn counting_follows_the_order_of_all_phases() {
    let counts = count([Failed, Pending, Failed, Stopped]);
    for (phase, n) in WorkspacePhase::ALL.iter().zip(counts) {
        let want = match phase {
            Failed => 2,
            Pending | Stopped => 1,
            _ => 0,
        };
        assert_eq!(n, want, "{phase:?}");
    }
}
