use super::*;

const S: Outcome = Outcome::Success;

fn f(why: &str) -> Outcome {
    Outcome::Failure(why.into())
}

fn u(why: &str) -> Outcome {
    Outcome::Unknown(why.into())
}

fn hang() -> Outcome {
    f("hung: still running past its 3s deadline")
}

/// Feeds (check, outcome) pairs in order and returns the verdict after each.
fn run(threshold: u32, steps: &[(Check, Outcome)]) -> Vec<Verdict> {
    let mut judge = Judge::new(threshold);
    let mut at = Timestamp::UNIX_EPOCH;
    steps
        .iter()
        .map(|(check, outcome)| {
            at += jiff::SignedDuration::from_secs(5);
            judge.record(*check, outcome.clone(), at, Duration::from_millis(10));
            judge.judge().verdict
        })
        .collect()
}

use Check::{Container as C, Volume as V};
use Verdict::{Healthy as H, Unhealthy as X, Unknown as Q};

/// (what it shows, threshold, results in order, verdict after each)
type Case = (&'static str, u32, Vec<(Check, Outcome)>, Vec<Verdict>);

#[test]
fn verdict_over_sequences_of_results() {
    let cases: Vec<Case> = vec![
        (
            "nothing passed yet is unknown, then healthy once both pass",
            3,
            vec![(V, S), (C, S)],
            vec![Q, H],
        ),
        (
            "two failures stay healthy, the third makes it unhealthy",
            3,
            vec![(V, S), (C, S), (V, f("ro")), (V, f("ro")), (V, f("ro"))],
            vec![Q, H, H, H, X],
        ),
        (
            "one pass clears the count and the verdict",
            3,
            vec![
                (V, S),
                (C, S),
                (V, f("ro")),
                (V, f("ro")),
                (V, f("ro")),
                (V, S),
            ],
            vec![Q, H, H, H, X, H],
        ),
        (
            "a pass between failures restarts the count",
            3,
            vec![
                (V, S),
                (C, S),
                (V, f("a")),
                (V, f("a")),
                (V, S),
                (V, f("a")),
                (V, f("a")),
            ],
            vec![Q, H, H, H, H, H, H],
        ),
        (
            "API trouble is unknown, never unhealthy",
            3,
            vec![
                (V, S),
                (C, S),
                (C, u("api")),
                (C, u("api")),
                (C, u("api")),
                (C, u("api")),
            ],
            vec![Q, H, Q, Q, Q, Q],
        ),
        (
            "unknown results neither count nor clear failures",
            3,
            vec![
                (V, S),
                (C, S),
                (C, f("x")),
                (C, u("api")),
                (C, f("x")),
                (C, u("api")),
                (C, f("x")),
            ],
            vec![Q, H, H, Q, H, Q, X],
        ),
        (
            "unhealthy outranks unknown from the other check",
            3,
            vec![
                (V, S),
                (C, S),
                (V, f("ro")),
                (V, f("ro")),
                (V, f("ro")),
                (C, u("api")),
            ],
            vec![Q, H, H, H, X, X],
        ),
        (
            "an unhealthy check stays unhealthy through unknown runs",
            2,
            vec![
                (V, S),
                (C, S),
                (C, f("x")),
                (C, f("x")),
                (C, u("api")),
                (C, S),
            ],
            vec![Q, H, H, X, X, H],
        ),
        (
            "a hung check counts as a failure each time it is found still stuck",
            3,
            vec![
                (V, S),
                (C, S),
                (V, hang()),
                (V, hang()),
                (V, hang()),
                (V, S),
            ],
            vec![Q, H, H, H, X, H],
        ),
        (
            "failing from the start reaches unhealthy without ever passing",
            3,
            vec![(V, f("ro")), (C, S), (V, f("ro")), (V, f("ro"))],
            vec![Q, Q, Q, X],
        ),
        (
            "threshold 1 reacts to the first failure",
            1,
            vec![(V, S), (C, S), (C, f("x"))],
            vec![Q, H, X],
        ),
        (
            "threshold 0 is read as 1",
            0,
            vec![(V, S), (C, S), (C, f("x"))],
            vec![Q, H, X],
        ),
    ];
    for (name, threshold, steps, want) in cases {
        assert_eq!(run(threshold, &steps), want, "{name}");
    }
}

#[test]
fn messages_name_the_failing_check_and_stay_stable() {
    let mut judge = Judge::new(2);
    let at = Timestamp::UNIX_EPOCH;
    let took = Duration::from_millis(1);
    judge.record(V, S, at, took);
    judge.record(C, S, at, took);
    assert_eq!(judge.judge().message, "volume and container checks pass");
    judge.record(V, f("create directory: Read-only file system"), at, took);
    judge.record(V, f("create directory: Read-only file system"), at, took);
    let first = judge.judge();
    judge.record(V, f("create directory: Read-only file system"), at, took);
    judge.record(C, u("API server did not answer"), at, took);
    let later = judge.judge();
    assert_eq!(first.verdict, Verdict::Unhealthy);
    assert_eq!(
        first, later,
        "more of the same failure does not change the condition"
    );
    assert_eq!(
        later.message,
        "volume check failing: create directory: Read-only file system"
    );
    let state = judge.state(V);
    assert_eq!(state.consecutive_failures, 3);
    assert_eq!(state.last_success, Some(at));
}

#[test]
fn retries_come_sooner_after_a_failure_and_intervals_are_jittered() {
    let interval = Duration::from_secs(30);
    let retry = Duration::from_secs(10);
    assert_eq!(next_delay(&f("x"), interval, retry, 0.7), retry);
    assert_eq!(next_delay(&S, interval, retry, 0.0), interval);
    assert_eq!(
        next_delay(&S, interval, retry, 1.0),
        Duration::from_secs(33)
    );
    assert_eq!(
        next_delay(&u("api"), interval, retry, -1.0),
        Duration::from_secs(27)
    );
    assert_eq!(
        next_delay(&S, interval, retry, 9.0),
        Duration::from_secs(33)
    );
    // A retry never waits longer than the interval.
    assert_eq!(next_delay(&f("x"), retry, interval, 0.0), retry);
}

#[test]
fn verdict_round_trips_through_its_atomic_encoding() {
    for v in Verdict::ALL {
        assert_eq!(Verdict::from_u8(v.to_u8()), v);
    }
}

enum Step {
    Run(Check, Outcome),
    Cordon(bool),
}

#[test]
fn a_cordoned_node_is_cordoned_not_unhealthy() {
    use Step::{Cordon, Run};
    use Verdict::Cordoned as K;
    let cases: Vec<(&str, Vec<Step>, Vec<Verdict>)> = vec![
        (
            "a healthy node cordoned, then uncordoned",
            vec![Run(V, S), Run(C, S), Cordon(true), Run(V, S), Cordon(false)],
            vec![Q, H, K, K, H],
        ),
        (
            "cordoned before any check passed: cordoned, then unknown until it passes",
            vec![Cordon(true), Run(V, S), Cordon(false), Run(C, S)],
            vec![K, K, Q, H],
        ),
        (
            "container failures from before the cordon wait for the uncordon",
            vec![
                Run(V, S),
                Run(C, f("x")),
                Run(C, f("x")),
                Run(C, f("x")),
                Cordon(true),
                Cordon(false),
                Run(C, S),
            ],
            vec![Q, Q, Q, X, K, X, H],
        ),
        (
            "the volume check still runs, and still makes a cordoned node unhealthy",
            vec![
                Run(C, S),
                Cordon(true),
                Run(V, f("disk")),
                Run(V, f("disk")),
                Run(V, f("disk")),
                Run(V, S),
            ],
            vec![Q, K, K, K, X, K],
        ),
        (
            "an inconclusive run while cordoned changes nothing",
            vec![Run(V, S), Run(C, S), Cordon(true), Run(C, u("api"))],
            vec![Q, H, K, K],
        ),
    ];
    for (what, steps, want) in cases {
        let mut judge = Judge::new(3);
        let mut at = Timestamp::UNIX_EPOCH;
        let got: Vec<Verdict> = steps
            .into_iter()
            .map(|step| {
                at += jiff::SignedDuration::from_secs(5);
                match step {
                    Run(check, outcome) => {
                        judge.record(check, outcome, at, Duration::from_millis(10))
                    }
                    Cordon(cordoned) => judge.set_cordoned(cordoned),
                }
                judge.judge().verdict
            })
            .collect();
        assert_eq!(got, want, "{what}");
    }
    let mut judge = Judge::new(3);
    judge.set_cordoned(true);
    assert!(
        judge.judge().message.starts_with("node cordoned"),
        "{}",
        judge.judge().message
    );
}
