use super::*;

fn key(name: &str) -> PodKey {
    ("team-a".to_string(), name.to_string())
}

fn at(version: &str) -> Seen {
    Seen::Changed(Some(version.to_string()))
}

/// What happens to each event of one pod around one reconcile's writes: `before` come
/// while it writes, `after` once it settled.
struct Case {
    what: &'static str,
    writes: Vec<Written>,
    before: Vec<Seen>,
    settled: Settled,
    /// Each later event, and whether it is dropped.
    after: Vec<(Seen, bool)>,
}

#[test]
fn only_the_echoes_of_the_reconcilers_own_writes_are_dropped() {
    let cases = [
        Case {
            what: "a create answered before its echo came",
            writes: vec![Written::At("10".into())],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("10"), true), (at("10"), false), (at("11"), false)],
        },
        Case {
            what: "a create whose echo came first",
            writes: vec![Written::At("20".into())],
            before: vec![at("20")],
            settled: Settled::Clean,
            after: vec![(at("21"), false)],
        },
        Case {
            what: "a create refused: nothing was written, nothing came",
            writes: vec![],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("5"), false)],
        },
        Case {
            what: "a create refused while a stranger's pod of that name appeared",
            writes: vec![],
            before: vec![at("5")],
            settled: Settled::LookAgain,
            after: vec![(at("6"), false)],
        },
        Case {
            what: "a graceful delete, then the kubelet's change",
            writes: vec![Written::At("30".into())],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("30"), true), (at("31"), false)],
        },
        Case {
            what: "the kubelet changed the pod while the delete was in flight",
            writes: vec![Written::At("41".into())],
            before: vec![at("40"), at("41")],
            settled: Settled::LookAgain,
            after: vec![(at("41"), false)],
        },
        Case {
            what: "a release, then the delete that left the pod gone",
            writes: vec![Written::At("50".into()), Written::Gone],
            before: vec![at("50")],
            settled: Settled::Clean,
            after: vec![(Seen::Deleted, true), (at("1"), false)],
        },
        Case {
            what: "a release whose echoes both came while it wrote",
            writes: vec![Written::At("60".into()), Written::Gone],
            before: vec![at("60"), Seen::Deleted],
            settled: Settled::Clean,
            after: vec![(at("1"), false)],
        },
        Case {
            what: "a release that left the pod stored, then its deletion by the kubelet",
            writes: vec![Written::At("70".into())],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("70"), true), (Seen::Deleted, false)],
        },
        Case {
            what: "the pod deleted by someone else, in place of the awaited echo",
            writes: vec![Written::At("80".into())],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(Seen::Deleted, false), (at("80"), false)],
        },
        Case {
            what: "an event without a version is never an echo",
            writes: vec![Written::At("90".into())],
            before: vec![Seen::Changed(None)],
            settled: Settled::LookAgain,
            after: vec![],
        },
    ];
    for case in cases {
        let mut echoes = Echoes::default();
        let pod = key("ws-alice");
        echoes.writing(pod.clone());
        for seen in case.before {
            assert!(
                echoes.is_echo(&pod, seen),
                "{}: held back while writing",
                case.what
            );
        }
        for written in case.writes {
            echoes.written(&pod, written);
        }
        assert_eq!(echoes.settle(&pod), case.settled, "{}", case.what);
        for (seen, dropped) in case.after {
            assert_eq!(
                echoes.is_echo(&pod, seen.clone()),
                dropped,
                "{}: {seen:?}",
                case.what
            );
        }
        assert!(echoes.0.is_empty(), "{}: nothing left awaited", case.what);
    }
}

#[test]
fn other_pods_and_reconciles_that_wrote_nothing_are_untouched() {
    let mut echoes = Echoes::default();
    echoes.writing(key("ws-alice"));
    assert!(
        !echoes.is_echo(&key("ws-bob"), at("1")),
        "bob is not written"
    );
    assert_eq!(
        echoes.settle(&key("ws-bob")),
        Settled::Clean,
        "bob's reconcile wrote nothing"
    );
    echoes.written(&key("ws-alice"), Written::At("2".into()));
    assert_eq!(echoes.settle(&key("ws-alice")), Settled::Clean);
    assert_eq!(
        echoes.settle(&key("ws-alice")),
        Settled::Clean,
        "a second settle changes nothing"
    );
    assert!(echoes.is_echo(&key("ws-alice"), at("2")));
    assert!(echoes.0.is_empty());
}

#[test]
fn a_later_reconcile_settles_the_echoes_an_earlier_one_still_awaits() {
    let mut echoes = Echoes::default();
    let pod = key("ws-alice");
    echoes.writing(pod.clone());
    echoes.written(&pod, Written::At("10".into()));
    assert_eq!(echoes.settle(&pod), Settled::Clean);
    // The next reconcile writes before the first one's echo came.
    echoes.writing(pod.clone());
    assert!(echoes.is_echo(&pod, at("10")));
    echoes.written(&pod, Written::At("12".into()));
    assert_eq!(
        echoes.settle(&pod),
        Settled::Clean,
        "10 was the first's echo"
    );
    assert!(echoes.is_echo(&pod, at("12")));
    assert!(echoes.0.is_empty());
}

#[test]
fn a_relist_forgets_what_is_awaited_but_not_what_is_being_written() {
    let mut echoes = Echoes::default();
    echoes.writing(key("ws-alice"));
    echoes.written(&key("ws-alice"), Written::Gone);
    assert_eq!(echoes.settle(&key("ws-alice")), Settled::Clean);
    echoes.writing(key("ws-bob"));
    echoes.relisting();
    assert!(
        !echoes.is_echo(&key("ws-alice"), Seen::Deleted),
        "alice's deletion may have gone by while the watch was down"
    );
    assert!(
        echoes.is_echo(&key("ws-bob"), at("3")),
        "bob's write is still in flight"
    );
    assert_eq!(echoes.settle(&key("ws-bob")), Settled::LookAgain);
}
