//! Reading an owner's request, checking `maxPostpone`, and when a drain stops a workspace.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::MaintenanceWindow;
use crate::hold::hold_tests::spec;
use crate::postpone::{check_request, drain_from};
use crate::validation::{validate_maintenance_window, validate_workspace_object};
use crate::window::CompiledWindow;

#[test]
fn an_owners_request_is_a_duration_up_to_a_day() {
    let cases: [(&str, Result<SignedDuration, &str>); 8] = [
        ("30m", Ok(SignedDuration::from_mins(30))),
        (" 1h30m ", Ok(SignedDuration::from_mins(90))),
        ("24h", Ok(SignedDuration::from_hours(24))),
        ("25h", Err("longer than 24h")),
        ("200h", Err("longer than 7 days")),
        ("0s", Err("longer than zero")),
        ("-5m", Err("longer than zero")),
        ("soon", Err("is not a duration such as 2h")),
    ];
    for (text, want) in cases {
        match (check_request(text), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
            (Err(got), Err(want)) => {
                assert!(got.contains(want), "{text}: {got}");
                assert!(
                    got.contains("lifeguard.dev/postpone-drain"),
                    "{text}: {got}"
                );
            }
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn max_postpone_is_checked_with_the_rest_of_the_window() {
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("absent", json!({"drain": true}), None),
        ("fits", json!({"drain": true, "maxPostpone": "30m"}), None),
        (
            "without drain",
            json!({"maxPostpone": "30m"}),
            Some("needs drain: true"),
        ),
        (
            "as long as the occurrence",
            json!({"drain": true, "maxPostpone": "1h"}),
            Some("not shorter than an occurrence"),
        ),
        (
            "not a duration",
            json!({"drain": true, "maxPostpone": "a while"}),
            Some("is not a duration"),
        ),
        (
            "over a day, in a week-long recurring window",
            json!({"drain": true, "maxPostpone": "25h", "start": null, "end": null,
                   "schedule": "@weekly", "duration": "72h"}),
            Some("longer than 24h"),
        ),
        (
            "recurring, shorter than its duration",
            json!({"drain": true, "maxPostpone": "90m", "start": null, "end": null,
                   "schedule": "0 22 * * 6", "duration": "2h"}),
            None,
        ),
    ];
    for (what, extra, want) in cases {
        let got = validate_maintenance_window(&spec(extra.clone()));
        match want {
            None => assert!(got.is_ok(), "{what}: {got:?}"),
            Some(text) => {
                let message = got.expect_err(what).to_string();
                assert!(message.contains("spec.maxPostpone"), "{what}: {message}");
                assert!(message.contains(text), "{what}: {message}");
            }
        }
        // The controller compiles what the webhook admits, and nothing else.
        let window: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": "w"}, "spec": spec(extra)
        }))
        .expect("window literal");
        assert_eq!(
            CompiledWindow::compile(&window).is_ok(),
            want.is_none(),
            "{what}"
        );
    }
}

#[test]
fn a_drain_stops_a_workspace_at_the_start_plus_the_lesser_of_request_and_cap() {
    let start: Timestamp = "2026-12-01T22:00:00Z".parse().expect("instant");
    let at = |text: &str| -> Timestamp { text.parse().expect("instant") };
    let mins = SignedDuration::from_mins;
    let cases = [
        ("no request", None, Some(mins(30)), start),
        ("no cap: nobody is postponed", Some("20m"), None, start),
        (
            "within the cap",
            Some("20m"),
            Some(mins(30)),
            at("2026-12-01T22:20:00Z"),
        ),
        (
            "over the cap",
            Some("2h"),
            Some(mins(30)),
            at("2026-12-01T22:30:00Z"),
        ),
        ("unreadable", Some("later"), Some(mins(30)), start),
        ("zero", Some("0m"), Some(mins(30)), start),
    ];
    for (what, request, max, want) in cases {
        assert_eq!(drain_from(start, request, max), want, "{what}");
    }
}

#[test]
fn the_webhook_refuses_a_workspace_whose_request_cannot_be_read() {
    let workspace = |annotations: Value| {
        json!({"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
               "metadata": {"name": "alice", "annotations": annotations},
               "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}})
    };
    assert!(validate_workspace_object(&workspace(json!({}))).is_ok());
    assert!(
        validate_workspace_object(&workspace(json!({"lifeguard.dev/postpone-drain": "45m"})))
            .is_ok()
    );
    for bad in [json!("tomorrow"), json!("36h"), json!(30)] {
        let refused =
            validate_workspace_object(&workspace(json!({"lifeguard.dev/postpone-drain": bad})));
        let message = refused.expect_err("refused").to_string();
        assert!(
            message.starts_with("metadata.annotations"),
            "{bad}: {message}"
        );
    }
}
