//! The hold decision, one row per situation a drain's gates can be in.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use lifeguard_api::MaintenanceWindowStatus;
use lifeguard_api::maintenance::{HoldStatus, condition};

use super::{Answer, Decision, Gate, decide, settle};

fn at(t: &str) -> Timestamp {
    t.parse().expect("time literal")
}

fn kept(gate: &str, since: &str, expired: bool) -> HoldStatus {
    HoldStatus {
        gate: gate.to_string(),
        since: Time(at(since)),
        message: "kept".to_string(),
        expired,
        cleared: false,
    }
}

fn cleared(gate: &str, since: &str) -> HoldStatus {
    HoldStatus {
        cleared: true,
        ..kept(gate, since, false)
    }
}

#[test]
fn the_hold_follows_the_gates_and_ends_at_max_hold() {
    let start = at("2026-12-01T22:00:00Z");
    let now = at("2026-12-01T22:30:00Z");
    let max = Some(SignedDuration::from_mins(20));
    let firing = || (Gate::Prometheus, Answer::Holds("1 series".to_string()));
    let backup = || (Gate::Pods, Answer::Holds("pod a/backup".to_string()));
    let clear = |gate| (gate, Answer::Clear);
    let down = || {
        (
            Gate::Prometheus,
            Answer::Unknown("connection refused".to_string()),
        )
    };
    // (what, answers, kept, maxHold, want: held, gate, since, expired, expired_now)
    type Want = (bool, Option<&'static str>, Option<&'static str>, bool, bool);
    type Case = (
        &'static str,
        Vec<(Gate, Answer)>,
        Option<HoldStatus>,
        Option<SignedDuration>,
        Want,
    );
    let cases: Vec<Case> = vec![
        (
            "all clear: no hold",
            vec![clear(Gate::Prometheus), clear(Gate::Pods)],
            None,
            max,
            (false, None, None, false, false),
        ),
        (
            "a gate holds: held since now",
            vec![clear(Gate::Prometheus), backup()],
            None,
            max,
            (
                true,
                Some("pods"),
                Some("2026-12-01T22:30:00Z"),
                false,
                false,
            ),
        ),
        (
            "the first holding gate is named",
            vec![firing(), backup()],
            None,
            max,
            (
                true,
                Some("prometheus"),
                Some("2026-12-01T22:30:00Z"),
                false,
                false,
            ),
        ),
        (
            "cannot be evaluated: holds",
            vec![down()],
            None,
            max,
            (
                true,
                Some("prometheus"),
                Some("2026-12-01T22:30:00Z"),
                false,
                false,
            ),
        ),
        (
            "still held: since is kept (a restart changes nothing)",
            vec![backup()],
            Some(kept("pods", "2026-12-01T22:15:00Z", false)),
            max,
            (
                true,
                Some("pods"),
                Some("2026-12-01T22:15:00Z"),
                false,
                false,
            ),
        ),
        (
            "another gate takes over: since is kept, maxHold bounds the whole hold",
            vec![firing()],
            Some(kept("pods", "2026-12-01T22:15:00Z", false)),
            max,
            (
                true,
                Some("prometheus"),
                Some("2026-12-01T22:15:00Z"),
                false,
                false,
            ),
        ),
        (
            "maxHold reached: the drain proceeds, announced once",
            vec![backup()],
            Some(kept("pods", "2026-12-01T22:10:00Z", false)),
            max,
            (
                false,
                Some("pods"),
                Some("2026-12-01T22:10:00Z"),
                true,
                true,
            ),
        ),
        (
            "expired earlier this occurrence: proceeds, not announced again",
            vec![backup()],
            Some(kept("pods", "2026-12-01T22:05:00Z", true)),
            max,
            (
                false,
                Some("pods"),
                Some("2026-12-01T22:05:00Z"),
                true,
                false,
            ),
        ),
        (
            "expired in an earlier occurrence: forgotten, held anew",
            vec![backup()],
            Some(kept("pods", "2026-11-30T22:05:00Z", true)),
            max,
            (
                true,
                Some("pods"),
                Some("2026-12-01T22:30:00Z"),
                false,
                false,
            ),
        ),
        (
            "no maxHold: held for as long as the gate holds",
            vec![down()],
            Some(kept("prometheus", "2026-12-01T22:00:00Z", false)),
            None,
            (
                true,
                Some("prometheus"),
                Some("2026-12-01T22:00:00Z"),
                false,
                false,
            ),
        ),
        (
            "released: not held, but since is kept for the rest of the occurrence",
            vec![clear(Gate::Pods)],
            Some(kept("pods", "2026-12-01T22:15:00Z", false)),
            max,
            (
                false,
                Some("pods"),
                Some("2026-12-01T22:15:00Z"),
                false,
                false,
            ),
        ),
        (
            "held again after a clear pass: maxHold counts from the first hold",
            vec![backup()],
            Some(cleared("pods", "2026-12-01T22:05:00Z")),
            max,
            (
                false,
                Some("pods"),
                Some("2026-12-01T22:05:00Z"),
                true,
                true,
            ),
        ),
        (
            "held again, within maxHold of the first hold: held",
            vec![firing()],
            Some(cleared("pods", "2026-12-01T22:20:00Z")),
            max,
            (
                true,
                Some("prometheus"),
                Some("2026-12-01T22:20:00Z"),
                false,
                false,
            ),
        ),
        (
            "cleared in an earlier occurrence: forgotten",
            vec![clear(Gate::Pods)],
            Some(cleared("pods", "2026-11-30T22:05:00Z")),
            max,
            (false, None, None, false, false),
        ),
    ];
    for (what, answers, kept, max_hold, want) in cases {
        let d: Decision = decide(&answers, kept.as_ref(), start, max_hold, now);
        let got = (
            d.held,
            d.hold.as_ref().map(|h| h.gate.as_str()),
            d.hold.as_ref().map(|h| h.since.0.to_string()),
            d.hold.as_ref().is_some_and(|h| h.expired),
            d.expired_now.is_some(),
        );
        let want = (want.0, want.1, want.2.map(str::to_string), want.3, want.4);
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn the_status_says_which_gate_holds_and_since_when() {
    let now = at("2026-12-01T22:30:00Z");
    let max = Some(SignedDuration::from_mins(20));
    let mut status = MaintenanceWindowStatus::default();
    let held = decide(
        &[(
            Gate::Pods,
            Answer::Holds("pod a/backup is Running".to_string()),
        )],
        None,
        at("2026-12-01T22:00:00Z"),
        max,
        now,
    );
    settle(&mut status, Some(&held), max, Some(3), now);
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == condition::DRAIN_HELD)
        .expect("DrainHeld");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Pods"));
    assert!(
        c.message.contains("pod a/backup is Running"),
        "{}",
        c.message
    );
    assert_eq!(status.hold.as_ref().map(|h| h.gate.as_str()), Some("pods"));

    let later = at("2026-12-01T22:50:00Z");
    let expired = decide(
        &[(
            Gate::Pods,
            Answer::Holds("pod a/backup is Running".to_string()),
        )],
        status.hold.as_ref(),
        at("2026-12-01T22:00:00Z"),
        max,
        later,
    );
    settle(&mut status, Some(&expired), max, Some(3), later);
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == condition::DRAIN_HELD)
        .expect("DrainHeld");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", condition::REASON_MAX_HOLD_EXPIRED)
    );
    assert!(c.message.contains("maxHold (20m)"), "{}", c.message);

    settle(&mut status, None, max, Some(3), later);
    assert!(status.hold.is_none());
    assert!(
        status.conditions.is_empty(),
        "not draining: the condition goes"
    );
}
