use super::*;

const UID: &str = "pod-1";

fn key(name: &str) -> PodKey {
    ("team-a".to_string(), name.to_string())
}

/// A change of the pod with UID `pod-1` to `version`.
fn at(version: &str) -> Seen {
    Seen::Changed {
        version: Some(version.to_string()),
        uid: Some(UID.to_string()),
    }
}

/// A change of another pod of the same name.
fn other_at(version: &str) -> Seen {
    Seen::Changed {
        version: Some(version.to_string()),
        uid: Some("pod-2".to_string()),
    }
}

fn deleted() -> Seen {
    Seen::Deleted {
        uid: Some(UID.to_string()),
    }
}

fn written(version: &str) -> Known {
    Known::Written(version.to_string())
}

fn read(version: &str) -> Known {
    Known::Read(version.to_string())
}

fn removed() -> Known {
    Known::Removed(UID.to_string())
}

/// One reconcile: `before` come while it runs, `known` is what it read and wrote; then
/// each of `after`, and whether it is dropped.
struct Case {
    what: &'static str,
    known: Vec<Known>,
    before: Vec<Seen>,
    settled: Settled,
    after: Vec<(Seen, bool)>,
}

#[test]
fn only_events_the_reconcile_knows_of_are_dropped() {
    let cases = [
        Case {
            what: "a create answered before its echo came",
            known: vec![written("10")],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("10"), true), (at("10"), false), (at("11"), false)],
        },
        Case {
            what: "a create whose echo came first",
            known: vec![written("20")],
            before: vec![at("20")],
            settled: Settled::Clean,
            after: vec![(at("21"), false)],
        },
        Case {
            what: "a reconcile that knew nothing of the pod and saw nothing",
            known: vec![],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("5"), false)],
        },
        Case {
            what: "a create refused while a stranger's pod of that name appeared",
            known: vec![],
            before: vec![other_at("5")],
            settled: Settled::LookAgain,
            after: vec![(other_at("6"), false)],
        },
        Case {
            what: "the kubelet's change, read before it came",
            known: vec![read("30")],
            before: vec![at("30")],
            settled: Settled::Clean,
            after: vec![(at("31"), false)],
        },
        Case {
            what: "a version only read is not awaited afterwards",
            known: vec![read("35")],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("35"), false)],
        },
        Case {
            what: "a graceful delete, then the kubelet's change",
            known: vec![read("39"), written("40")],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("40"), true), (at("41"), false)],
        },
        Case {
            what: "the kubelet changed the pod after the read, and the delete kept it",
            known: vec![read("44"), written("46")],
            before: vec![at("45"), at("46")],
            settled: Settled::LookAgain,
            after: vec![(at("46"), false)],
        },
        Case {
            what: "a release, then the delete that removed the pod",
            known: vec![read("49"), written("50"), removed()],
            before: vec![at("50")],
            settled: Settled::Clean,
            after: vec![(deleted(), true), (at("1"), false)],
        },
        Case {
            what: "the kubelet's change after the read, history once the release removed it",
            known: vec![read("59"), written("61"), removed()],
            before: vec![at("60"), at("61"), deleted()],
            settled: Settled::Clean,
            after: vec![(other_at("1"), false)],
        },
        Case {
            what: "a release's changes come late: history until the deletion",
            known: vec![written("70"), removed()],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("69"), true), (at("70"), true), (deleted(), true)],
        },
        Case {
            what: "a release that left the pod stored, then its deletion by the kubelet",
            known: vec![written("75")],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(at("75"), true), (deleted(), false)],
        },
        Case {
            what: "a new pod of the name after the removal is news",
            known: vec![removed()],
            before: vec![other_at("80")],
            settled: Settled::LookAgain,
            after: vec![(deleted(), false)],
        },
        Case {
            what: "the pod deleted by someone else, in place of the awaited echo",
            known: vec![written("85")],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(deleted(), false), (at("85"), false)],
        },
        Case {
            what: "read as gone while the watch had it: its deletion comes after",
            known: vec![Known::Absent { watched: true }],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(deleted(), true), (deleted(), false)],
        },
        Case {
            what: "read as gone while the watch had it: its deletion came while it ran",
            known: vec![Known::Absent { watched: true }],
            before: vec![deleted()],
            settled: Settled::Clean,
            after: vec![(deleted(), false)],
        },
        Case {
            what: "started by a timer, the kubelet's changes came while it read the last",
            known: vec![read("101")],
            before: vec![at("100"), at("101")],
            settled: Settled::Clean,
            after: vec![(at("102"), false)],
        },
        Case {
            what: "a change after the version read is news, even after one before it",
            known: vec![read("111")],
            before: vec![at("110"), at("111"), at("112")],
            settled: Settled::LookAgain,
            after: vec![(at("113"), false)],
        },
        Case {
            what: "an event held after the one read is news: order decides, versions are not compared",
            known: vec![read("121")],
            before: vec![at("121"), at("120")],
            settled: Settled::LookAgain,
            after: vec![],
        },
        Case {
            what: "read as gone after its deletion came while it ran and left the watch",
            known: vec![Known::Absent { watched: false }],
            before: vec![deleted()],
            settled: Settled::Clean,
            after: vec![(deleted(), false)],
        },
        Case {
            what: "read as gone long after: no deletion is awaited",
            known: vec![Known::Absent { watched: false }],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(deleted(), false)],
        },
        Case {
            what: "read as gone, whatever the UID of the deletion that comes",
            known: vec![Known::Absent { watched: true }],
            before: vec![Seen::Deleted { uid: None }],
            settled: Settled::Clean,
            after: vec![(Seen::Deleted { uid: None }, false)],
        },
        Case {
            what: "read as gone, then a new pod of the name is news",
            known: vec![Known::Absent { watched: true }],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(other_at("3"), false), (deleted(), false)],
        },
        Case {
            what: "read as gone, then created: a deletion may be the new pod's, so it is news",
            known: vec![Known::Absent { watched: true }, written("95")],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(deleted(), false), (at("95"), false)],
        },
        Case {
            what: "a delete of exactly the pod found it gone: its deletion is known",
            known: vec![read("97"), removed()],
            before: vec![],
            settled: Settled::Clean,
            after: vec![(deleted(), true), (at("98"), false)],
        },
        Case {
            what: "events without a version or UID are never known",
            known: vec![read("90"), removed()],
            before: vec![Seen::Changed {
                version: None,
                uid: None,
            }],
            settled: Settled::LookAgain,
            after: vec![(Seen::Deleted { uid: None }, false)],
        },
    ];
    for case in cases {
        let mut echoes = Echoes::default();
        let pod = key("ws-alice");
        echoes.reconciling(pod.clone());
        for seen in case.before {
            assert!(
                echoes.is_echo(&pod, seen),
                "{}: held back while it runs",
                case.what
            );
        }
        for known in case.known {
            echoes.known(&pod, known);
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
fn other_pods_and_other_reconciles_are_untouched() {
    let mut echoes = Echoes::default();
    echoes.reconciling(key("ws-alice"));
    assert!(
        !echoes.is_echo(&key("ws-bob"), at("1")),
        "bob's is not running"
    );
    echoes.known(&key("ws-bob"), written("1"));
    assert_eq!(
        echoes.settle(&key("ws-bob")),
        Settled::Clean,
        "bob's reconcile was not started here"
    );
    echoes.known(&key("ws-alice"), written("2"));
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
    echoes.reconciling(pod.clone());
    echoes.known(&pod, written("10"));
    assert_eq!(echoes.settle(&pod), Settled::Clean);
    // The next reconcile starts before the first one's echo came.
    echoes.reconciling(pod.clone());
    assert!(echoes.is_echo(&pod, at("10")));
    echoes.known(&pod, written("12"));
    assert_eq!(
        echoes.settle(&pod),
        Settled::Clean,
        "10 was the first's echo"
    );
    assert!(echoes.is_echo(&pod, at("12")));
    assert!(echoes.0.is_empty());
}

#[test]
fn a_relist_forgets_what_is_awaited_but_not_what_runs() {
    let mut echoes = Echoes::default();
    echoes.reconciling(key("ws-alice"));
    echoes.known(&key("ws-alice"), removed());
    assert_eq!(echoes.settle(&key("ws-alice")), Settled::Clean);
    echoes.reconciling(key("ws-bob"));
    echoes.relisting();
    assert!(
        !echoes.is_echo(&key("ws-alice"), deleted()),
        "alice's deletion may have gone by while the watch was down"
    );
    assert!(
        echoes.is_echo(&key("ws-bob"), at("3")),
        "bob's reconcile still runs"
    );
    assert_eq!(echoes.settle(&key("ws-bob")), Settled::LookAgain);
}
