//! `maintenance start` flags to the window it creates, with a fixed clock.

use clap::Parser;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::{started_line, window_starting};
use crate::flags::{Cli, Command, Maintenance, Start};

fn start_args(flags: &[&str]) -> Start {
    let argv = ["lifeguard", "maintenance", "start", "upgrade"]
        .iter()
        .chain(flags)
        .copied();
    match Cli::try_parse_from(argv).map(|cli| cli.command) {
        Ok(Command::Maintenance(Maintenance::Start(start))) => start,
        other => panic!("{flags:?} parsed as {other:?}"),
    }
}

#[test]
fn start_now_or_later_with_notice() {
    let now: Timestamp = "2026-12-01T21:30:00.4Z".parse().expect("timestamp");
    // (flags, start, end, notice)
    let cases: [(&[&str], &str, &str, Option<&str>); 3] = [
        (
            &["--for", "2h"],
            "2026-12-01T21:30:00Z",
            "2026-12-01T23:30:00Z",
            None,
        ),
        (
            &["--at", "22:00", "--for", "2h", "--drain", "--notice", "15m"],
            "2026-12-01T22:00:00Z",
            "2026-12-02T00:00:00Z",
            Some("15m"),
        ),
        (
            &[
                "--at",
                "2026-12-01T23:00:00Z",
                "--until",
                "2026-12-02T01:00:00Z",
                "--drain",
                "--notice",
                "1h30m",
            ],
            "2026-12-01T23:00:00Z",
            "2026-12-02T01:00:00Z",
            Some("1h 30m"),
        ),
    ];
    for (flags, start, end, notice) in cases {
        let w = window_starting(start_args(flags), now, &TimeZone::UTC)
            .unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        assert_eq!(w.spec.start.as_deref(), Some(start), "{flags:?}");
        assert_eq!(w.spec.end.as_deref(), Some(end), "{flags:?}");
        assert_eq!(w.spec.notice.as_deref(), notice, "{flags:?}");
        // The notice is written in a form the webhook's validation reads back.
        let period = w.spec.notice_period().expect("valid notice");
        assert_eq!(period.is_some(), notice.is_some(), "{flags:?}");
    }
}

#[test]
fn start_refuses_what_cannot_work() {
    let now: Timestamp = "2026-12-01T21:30:00Z".parse().expect("timestamp");
    let refused = window_starting(
        start_args(&["--at", "2026-12-01T21:00:00Z", "--for", "1h"]),
        now,
        &TimeZone::UTC,
    );
    let message = refused.expect_err("a start in the past").to_string();
    assert!(
        message.contains("--at") && message.contains("in the past"),
        "{message}"
    );
    let argv = [
        "lifeguard",
        "maintenance",
        "start",
        "up",
        "--for",
        "1h",
        "--notice",
        "15m",
    ];
    let parsed = Cli::try_parse_from(argv);
    let message = parsed
        .map(|_| ())
        .expect_err("notice without drain")
        .to_string();
    assert!(message.contains("--drain"), "{message}");
}

#[test]
fn start_says_whether_the_window_is_on_or_scheduled() {
    let now: Timestamp = "2026-12-01T21:30:00Z".parse().expect("timestamp");
    let on = window_starting(start_args(&["--for", "1h", "--drain"]), now, &TimeZone::UTC)
        .expect("valid");
    assert_eq!(
        started_line(&on, now),
        "maintenancewindow/upgrade started: until 2026-12-01T22:30:00Z, draining\n"
    );
    let later = window_starting(
        start_args(&["--at", "22:00", "--for", "1h", "--drain", "--notice", "15m"]),
        now,
        &TimeZone::UTC,
    )
    .expect("valid");
    assert_eq!(
        started_line(&later, now),
        "maintenancewindow/upgrade scheduled: from 2026-12-01T22:00:00Z until 2026-12-01T23:00:00Z, \
         draining; covered workspaces are told 15m before\n"
    );
}

#[test]
fn start_on_some_nodes_with_a_drain_budget() {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let now: Timestamp = "2026-12-01T21:30:00Z".parse().expect("timestamp");
    let flags = [
        "--for",
        "2h",
        "--drain",
        "--node-selector",
        "pool=a",
        "--max-concurrent",
        "2",
    ];
    let w = window_starting(start_args(&flags), now, &TimeZone::UTC).expect("valid");
    let labels = w
        .spec
        .node_selector
        .as_ref()
        .and_then(|s| s.match_labels.clone())
        .unwrap_or_default();
    assert_eq!(labels.get("pool").map(String::as_str), Some("a"));
    assert_eq!(w.spec.max_concurrent_drains, Some(IntOrString::Int(2)));
    assert_eq!(
        started_line(&w, now),
        "maintenancewindow/upgrade started: until 2026-12-01T23:30:00Z, on the selected nodes only, draining at most 2 at once\n"
    );
    let zero = ["--for", "2h", "--drain", "--max-concurrent", "0%"];
    let refused = window_starting(start_args(&zero), now, &TimeZone::UTC)
        .expect_err("a budget of 0% is refused before anything is created")
        .to_string();
    assert!(refused.contains("spec.maxConcurrentDrains"), "{refused}");
    let without_drain = [
        "lifeguard",
        "maintenance",
        "start",
        "x",
        "--for",
        "2h",
        "--max-concurrent",
        "2",
    ];
    assert!(
        Cli::try_parse_from(without_drain).is_err(),
        "--max-concurrent needs --drain"
    );
}
