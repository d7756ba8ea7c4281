//! One row per way `holdWhile`/`maxHold` can be wrong, and what a valid one compiles to.

use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::hold::compile;
use crate::maintenance::MaintenanceWindowSpec;
use crate::validation::validate_maintenance_window;

/// A one-hour one-off window's spec (2026-12-01 22:00 to 23:00 UTC) with `extra` in it.
pub(crate) fn spec(extra: Value) -> MaintenanceWindowSpec {
    let mut spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(spec).expect("spec literal")
}

#[test]
fn invalid_gates_say_what_is_wrong() {
    let pods = json!({"pods": {"selector": {"matchLabels": {"app": "backup"}}}});
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "maxHold without holdWhile",
            json!({"drain": true, "maxHold": "30m"}),
            vec!["spec.maxHold", "needs spec.holdWhile"],
        ),
        (
            "holdWhile without drain",
            json!({"holdWhile": pods}),
            vec!["spec.holdWhile", "needs drain: true"],
        ),
        (
            "no gate",
            json!({"drain": true, "holdWhile": {}}),
            vec!["spec.holdWhile", "names no gate"],
        ),
        (
            "empty query",
            json!({"drain": true, "holdWhile": {"prometheus": {"query": "  "}}}),
            vec!["spec.holdWhile.prometheus.query", "must not be empty"],
        ),
        (
            "bad operator",
            json!({"drain": true, "holdWhile": {"pods": {"selector": {"matchExpressions": [{"key": "app", "operator": "Is", "values": ["x"]}]}}}}),
            vec![
                "spec.holdWhile.pods.selector.matchExpressions[0]",
                "unknown operator \"Is\"",
            ],
        ),
        (
            "empty selector",
            json!({"drain": true, "holdWhile": {"pods": {"selector": {}}}}),
            vec!["spec.holdWhile.pods.selector", "would match every pod"],
        ),
        (
            "maxHold zero",
            json!({"drain": true, "holdWhile": pods, "maxHold": "0s"}),
            vec!["spec.maxHold", "longer than zero"],
        ),
        (
            "maxHold negative",
            json!({"drain": true, "holdWhile": pods, "maxHold": "-5m"}),
            vec!["spec.maxHold", "longer than zero"],
        ),
        (
            "maxHold over 7 days",
            json!({"drain": true, "holdWhile": pods, "maxHold": "200h"}),
            vec!["spec.maxHold", "longer than 7 days"],
        ),
        (
            "maxHold not a duration",
            json!({"drain": true, "holdWhile": pods, "maxHold": "soon"}),
            vec!["spec.maxHold", "\"soon\"", "not a duration"],
        ),
    ];
    for (what, extra, want) in cases {
        let spec = spec(extra);
        let errors = compile(&spec).expect_err(what).to_string();
        for fact in &want {
            assert!(errors.contains(fact), "{what}: {errors:?} lacks {fact:?}");
        }
        let webhook = validate_maintenance_window(&spec)
            .expect_err(what)
            .to_string();
        assert!(
            webhook.contains(want[0]),
            "{what}: the webhook says {webhook:?}"
        );
    }
}

#[test]
fn valid_gates_compile() {
    let none = compile(&spec(json!({"drain": true}))).expect("valid");
    assert!(none.is_none());
    let gates = compile(&spec(
        json!({"drain": true, "maxHold": "20s", "holdWhile": {
        "prometheus": {"query": " vector(1) "},
        "pods": {"selector": {"matchLabels": {"app": "backup"}}}}}),
    ))
    .expect("valid")
    .expect("gates");
    assert_eq!(gates.query.as_deref(), Some("vector(1)"));
    assert_eq!(
        gates.pods.map(|s| s.to_string()).as_deref(),
        Some("app=backup")
    );
    assert_eq!(gates.max_hold, Some(SignedDuration::from_secs(20)));
}
