//! One row per way a spec can be wrong, asserting the facts the message must carry.

use serde_json::json;

use crate::maintenance::MaintenanceWindowSpec;
use crate::validation::{
    validate_maintenance_window, validate_maintenance_window_object, validate_workspace_object,
};

fn window(spec: serde_json::Value) -> MaintenanceWindowSpec {
    serde_json::from_value(spec).expect("spec literal")
}

#[test]
fn maintenance_window_errors_name_the_field_and_the_value() {
    let cases: Vec<(&str, serde_json::Value, Vec<&str>)> = vec![
        (
            "both forms",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "schedule": "0 22 * * *", "duration": "2h"}),
            vec!["not both"],
        ),
        (
            "neither form",
            json!({"message": "x"}),
            vec!["give either start and end"],
        ),
        (
            "start without end",
            json!({"start": "2026-12-01T22:00:00Z"}),
            vec!["spec.end", "required"],
        ),
        (
            "end without start",
            json!({"end": "2026-12-01T22:00:00Z"}),
            vec!["spec.start", "required"],
        ),
        (
            "unparseable start",
            json!({"start": "tomorrow", "end": "2026-12-01T23:00:00Z"}),
            vec!["spec.start", "\"tomorrow\"", "RFC 3339"],
        ),
        (
            "start without offset",
            json!({"start": "2026-12-01T22:00:00", "end": "2026-12-01T23:00:00Z"}),
            vec!["spec.start", "offset"],
        ),
        (
            "end before start",
            json!({"start": "2026-12-01T23:00:00Z", "end": "2026-12-01T22:00:00Z"}),
            vec!["spec.end", "not after start"],
        ),
        (
            "end equals start",
            json!({"start": "2026-12-01T23:00:00Z", "end": "2026-12-01T23:00:00Z"}),
            vec!["spec.end", "not after start"],
        ),
        (
            "the + (AND) day-of-week modifier",
            json!({"schedule": "0 2 */2 * +6", "duration": "1h"}),
            vec![
                "spec.schedule",
                "a leading + is not accepted",
                "Kubernetes CronJob",
            ],
        ),
        (
            "time zone with one-off",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "timeZone": "UTC"}),
            vec!["spec.timeZone", "schedule only"],
        ),
        (
            "schedule without duration",
            json!({"schedule": "0 22 * * *"}),
            vec!["spec.duration", "required"],
        ),
        (
            "duration without schedule",
            json!({"duration": "2h"}),
            vec!["spec.schedule", "required"],
        ),
        (
            "bad cron",
            json!({"schedule": "0 25 * * *", "duration": "2h"}),
            vec![
                "spec.schedule",
                "\"0 25 * * *\"",
                "not a valid schedule",
                "hour: \"25\" goes above the maximum 23",
            ],
        ),
        (
            "seconds field",
            json!({"schedule": "0 0 22 * * *", "duration": "2h"}),
            vec!["spec.schedule", "6 fields", "expected 5"],
        ),
        (
            "too few fields",
            json!({"schedule": "0 22 *", "duration": "2h"}),
            vec!["3 fields"],
        ),
        (
            "a list holding * is still checked (was reduced to *)",
            json!({"schedule": "* * * * *,b", "duration": "2h"}),
            vec!["spec.schedule", "day-of-week: value \"b\" is not a number"],
        ),
        (
            "a list holding * is checked for range",
            json!({"schedule": "0 0 *,99 * *", "duration": "2h"}),
            vec![
                "spec.schedule",
                "day-of-month: \"99\" goes above the maximum 31",
            ],
        ),
        (
            "a list holding */1 is still checked",
            json!({"schedule": "0 0 */1,foo * 1", "duration": "2h"}),
            vec![
                "spec.schedule",
                "day-of-month: value \"foo\" is not a number",
            ],
        ),
        (
            "a CronJob refusal: day-of-week 7",
            json!({"schedule": "0 0 * * 7", "duration": "2h"}),
            vec!["spec.schedule", "Sunday is 0 or sun"],
        ),
        (
            "never matches",
            json!({"schedule": "0 0 31 4 *", "duration": "2h"}),
            vec!["spec.schedule", "never matches"],
        ),
        (
            "unknown zone",
            json!({"schedule": "0 22 * * *", "duration": "2h", "timeZone": "Mars/Olympus"}),
            vec!["spec.timeZone", "\"Mars/Olympus\"", "IANA"],
        ),
        (
            "zero duration",
            json!({"schedule": "0 22 * * *", "duration": "0s"}),
            vec!["spec.duration", "longer than zero"],
        ),
        (
            "negative duration",
            json!({"schedule": "0 22 * * *", "duration": "-2h"}),
            vec!["spec.duration", "longer than zero"],
        ),
        (
            "unparseable duration",
            json!({"schedule": "0 22 * * *", "duration": "two hours"}),
            vec!["spec.duration", "\"two hours\"", "such as 2h"],
        ),
        (
            "too long duration",
            json!({"schedule": "0 22 * * *", "duration": "200h"}),
            vec!["spec.duration", "7 days"],
        ),
        (
            "notice without drain",
            json!({"schedule": "0 22 * * *", "duration": "2h", "notice": "15m"}),
            vec!["spec.notice", "drain: true"],
        ),
        (
            "unparseable notice",
            json!({"schedule": "0 22 * * *", "duration": "2h", "drain": true, "notice": "soon"}),
            vec!["spec.notice", "\"soon\"", "such as 2h"],
        ),
        (
            "zero notice",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true, "notice": "0m"}),
            vec!["spec.notice", "longer than zero"],
        ),
        (
            "too long notice",
            json!({"schedule": "0 22 * * *", "duration": "2h", "drain": true, "notice": "200h"}),
            vec!["spec.notice", "longer than 7 days"],
        ),
        (
            "In without values",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In"}]}}),
            vec![
                "spec.namespaceSelector.matchExpressions[0]",
                "at least one value",
            ],
        ),
        (
            "Exists with values",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "workspaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]}}),
            vec![
                "spec.workspaceSelector.matchExpressions[0]",
                "takes no values",
            ],
        ),
        (
            "unknown operator",
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Like", "values": ["a"]}]}}),
            vec!["unknown operator \"Like\""],
        ),
    ];
    for (what, spec, facts) in cases {
        let message = match validate_maintenance_window(&window(spec)) {
            Ok(()) => panic!("{what}: accepted"),
            Err(errors) => errors.to_string(),
        };
        for fact in facts {
            assert!(message.contains(fact), "{what}: {message:?} lacks {fact:?}");
        }
    }
}

#[test]
fn all_errors_are_collected() {
    let spec = window(json!({"schedule": "bad", "duration": "-1h", "timeZone": "Nowhere/City"}));
    let errors = validate_maintenance_window(&spec).expect_err("three problems");
    let fields: Vec<&str> = errors.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["spec.schedule", "spec.duration", "spec.timeZone"]);
}

#[test]
fn valid_windows_pass() {
    for spec in [
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:30:00+01:00"}),
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:30:00Z"}),
        json!({"schedule": "0 22 * * 6", "duration": "4h", "timeZone": "Europe/Berlin"}),
        json!({"schedule": "30 2 * * *", "duration": "1h30m"}),
        json!({"schedule": "30 2 * * *", "duration": "1h30m", "drain": true, "notice": "15m"}),
        json!({"schedule": "0 22 L * *", "duration": "90m", "namespaceSelector": {"matchLabels": {"env": "dev"}}}),
        // Schedules copied from CronJobs.
        json!({"schedule": "@daily", "duration": "1h"}),
        json!({"schedule": "@weekly", "duration": "1h", "timeZone": "Europe/Berlin"}),
        json!({"schedule": "0/15 * * * *", "duration": "5m"}),
        json!({"schedule": "0 3 * * MON/2", "duration": "1h"}),
        json!({"schedule": "0 3 ? * ?", "duration": "1h"}),
    ] {
        let result = validate_maintenance_window(&window(spec.clone()));
        assert!(result.is_ok(), "{spec}: {result:?}");
    }
}

#[test]
fn workspace_errors() {
    let containers = json!([{"name": "ide", "image": "busybox"}]);
    let cases: Vec<(&str, serde_json::Value, Vec<&str>)> = vec![
        (
            "no containers",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"spec": {"containers": []}}}}),
            vec!["spec.podTemplate.spec.containers", "at least one"],
        ),
        (
            "no pod spec",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {}}}),
            vec!["spec.podTemplate.spec", "required"],
        ),
        (
            "container without image",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide"}]}}}}),
            vec!["containers[0].image", "required"],
        ),
        (
            "duplicate container names",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "x"}, {"name": "ide", "image": "y"}]}}}}),
            vec!["containers[1].name", "used twice"],
        ),
        (
            "pod name set",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"metadata": {"name": "mine"}, "spec": {"containers": containers}}}}),
            vec!["spec.podTemplate.metadata.name", "ws-<workspace>"],
        ),
        (
            "workspace label in the template",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"metadata": {"labels": {"lifeguard.dev/workspace": "a"}}, "spec": {"containers": containers}}}}),
            vec![
                "spec.podTemplate.metadata.labels[lifeguard.dev/workspace]",
                "set by the lifeguard controller only",
            ],
        ),
        (
            "re-creation marker in the template",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"metadata": {"annotations": {"lifeguard.dev/recreation": "1"}}, "spec": {"containers": containers}}}}),
            vec![
                "spec.podTemplate.metadata.annotations[lifeguard.dev/recreation]",
                "must not be set",
            ],
        ),
        (
            "start number in the template",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"metadata": {"annotations": {"lifeguard.dev/start": "5"}}, "spec": {"containers": containers}}}}),
            vec!["annotations[lifeguard.dev/start]"],
        ),
        (
            "a finalizer of the template's own",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"metadata": {"finalizers": ["example.com/keep"]}, "spec": {"containers": containers}}}}),
            vec![
                "spec.podTemplate.metadata.finalizers",
                "only lifeguard's finalizer",
            ],
        ),
        (
            "a subdomain of lifeguard.dev",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"metadata": {"labels": {"x.lifeguard.dev/y": "1"}}, "spec": {"containers": containers}}}}),
            vec!["labels[x.lifeguard.dev/y]"],
        ),
        (
            "name too long",
            json!({"metadata": {"name": "a".repeat(64)}, "spec": {"podTemplate": {"spec": {"containers": containers}}}}),
            vec!["metadata.name", "64 characters"],
        ),
        (
            "wrong type",
            json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"spec": {"containers": "ide"}}}}),
            vec!["spec.podTemplate.spec.containers", "invalid type"],
        ),
        ("no spec", json!({"metadata": {"name": "a"}}), vec!["spec"]),
        (
            "start timeout not a duration",
            json!({"metadata": {"name": "a"}, "spec": {"startTimeout": "soon", "podTemplate": {"spec": {"containers": containers}}}}),
            vec!["spec.startTimeout", "\"soon\" is not a duration"],
        ),
        (
            "start timeout zero",
            json!({"metadata": {"name": "a"}, "spec": {"startTimeout": "0s", "podTemplate": {"spec": {"containers": containers}}}}),
            vec!["spec.startTimeout", "longer than zero"],
        ),
        (
            "start timeout over a day",
            json!({"metadata": {"name": "a"}, "spec": {"startTimeout": "25h", "podTemplate": {"spec": {"containers": containers}}}}),
            vec!["spec.startTimeout", "longer than 24h"],
        ),
    ];
    for (what, object, facts) in cases {
        let message = match validate_workspace_object(&object) {
            Ok(()) => panic!("{what}: accepted"),
            Err(errors) => errors.to_string(),
        };
        for fact in facts {
            assert!(message.contains(fact), "{what}: {message:?} lacks {fact:?}");
        }
    }
    let good = json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"metadata": {
        "labels": {"team": "blue", "notlifeguard.dev/x": "1"},
        "annotations": {"example.com/lifeguard.dev": "1"}}, "spec": {"containers": containers}}}});
    assert_eq!(validate_workspace_object(&good), Ok(()));
    let timed = json!({"metadata": {"name": "a"}, "spec": {"startTimeout": "90m",
        "podTemplate": {"spec": {"containers": containers}}}});
    assert_eq!(validate_workspace_object(&timed), Ok(()));
}

#[test]
fn object_type_errors_carry_the_json_path() {
    let object = json!({"metadata": {"name": "w"}, "spec": {"schedule": 5, "duration": "2h"}});
    let message = validate_maintenance_window_object(&object)
        .expect_err("type error")
        .to_string();
    assert!(
        message.starts_with("spec.schedule: invalid type"),
        "{message}"
    );
}

#[test]
fn node_scope_errors_come_with_the_schedule_errors() {
    let spec = window(json!({
        "schedule": "0 22 * * *", "duration": "2h",
        "nodeSelector": {}, "maxConcurrentDrains": "0%"
    }));
    let message = validate_maintenance_window(&spec)
        .expect_err("empty node selector, budget without drain")
        .to_string();
    for part in [
        "spec.nodeSelector: is empty",
        "spec.maxConcurrentDrains: \"0%\" must be a percentage between 1% and 100%",
    ] {
        assert!(message.contains(part), "{part:?} missing from {message}");
    }
    let node_scoped = window(json!({
        "schedule": "0 22 * * *", "duration": "2h", "drain": true,
        "nodeSelector": {"matchLabels": {"pool": "a"}}, "maxConcurrentDrains": 1
    }));
    assert_eq!(validate_maintenance_window(&node_scoped), Ok(()));
}
