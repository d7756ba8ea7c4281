//! The budget arithmetic, the field checks and the negated selector, one row per case.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeSelectorTerm;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use super::*;

#[test]
fn budget_says_how_many_new_stops_may_start() {
    // (what, budget, total, in flight, paused, may start)
    let cases = [
        ("no limit", Budget::Unlimited, 40, 3, false, None),
        ("no limit, paused", Budget::Unlimited, 40, 3, true, Some(0)),
        (
            "one, none in flight",
            Budget::Count(1),
            4,
            0,
            false,
            Some(1),
        ),
        ("one, one in flight", Budget::Count(1), 4, 1, false, Some(0)),
        (
            "four, one in flight",
            Budget::Count(4),
            40,
            1,
            false,
            Some(3),
        ),
        (
            "in flight above the budget (lowered meanwhile)",
            Budget::Count(2),
            40,
            5,
            false,
            Some(0),
        ),
        (
            "paused holds new stops",
            Budget::Count(4),
            40,
            0,
            true,
            Some(0),
        ),
        ("25% of 40", Budget::Percent(25), 40, 0, false, Some(10)),
        (
            "25% of 10 rounds up",
            Budget::Percent(25),
            10,
            1,
            false,
            Some(2),
        ),
        (
            "1% of 3 is still one",
            Budget::Percent(1),
            3,
            0,
            false,
            Some(1),
        ),
        (
            "1% of nothing is one",
            Budget::Percent(1),
            0,
            0,
            false,
            Some(1),
        ),
        ("100%", Budget::Percent(100), 7, 2, false, Some(5)),
    ];
    for (what, budget, total, in_flight, paused, want) in cases {
        assert_eq!(budget.may_start(total, in_flight, paused), want, "{what}");
    }
}

#[test]
fn budget_values_parse_or_say_what_is_wrong() {
    let int = |n| Some(IntOrString::Int(n));
    let text = |t: &str| Some(IntOrString::String(t.into()));
    let ok = [
        (None, Budget::Unlimited),
        (int(1), Budget::Count(1)),
        (int(4), Budget::Count(4)),
        (text("1%"), Budget::Percent(1)),
        (text("25%"), Budget::Percent(25)),
        (text("100%"), Budget::Percent(100)),
    ];
    for (value, want) in ok {
        assert_eq!(parse_budget(value.as_ref()), Ok(want), "{value:?}");
    }
    let bad = [
        (int(0), "at least 1"),
        (int(-2), "at least 1"),
        (text("0%"), "between 1% and 100%"),
        (text("150%"), "between 1% and 100%"),
        (text("two"), "neither a number such as 2 nor a percentage"),
        (text("3"), "neither a number"),
        (text("-5%"), "neither a number"),
    ];
    for (value, want) in bad {
        match parse_budget(value.as_ref()) {
            Err(message) => assert!(message.contains(want), "{value:?}: {message}"),
            Ok(b) => panic!("{value:?} accepted as {b:?}"),
        }
    }
}

fn spec(value: serde_json::Value) -> MaintenanceWindowSpec {
    serde_json::from_value(value).expect("spec literal")
}

#[test]
fn node_scope_fields_are_checked_with_precise_messages() {
    // (what, spec, expected messages: each "field: part")
    let cases: Vec<(&str, serde_json::Value, Vec<&str>)> = vec![
        (
            "node-scoped drain without a budget is fine",
            json!({"drain": true, "nodeSelector": {"matchLabels": {"pool": "a"}}}),
            vec![],
        ),
        (
            "budget and pause with drain are fine",
            json!({"drain": true, "maxConcurrentDrains": "25%", "drainPaused": true}),
            vec![],
        ),
        (
            "empty node selector",
            json!({"nodeSelector": {}}),
            vec!["spec.nodeSelector: is empty and would select every node"],
        ),
        (
            "bad operator",
            json!({"nodeSelector": {"matchExpressions": [{"key": "pool", "operator": "Is", "values": ["a"]}]}}),
            vec!["spec.nodeSelector.matchExpressions[0]: unknown operator \"Is\""],
        ),
        (
            "In without values",
            json!({"nodeSelector": {"matchExpressions": [{"key": "pool", "operator": "In"}]}}),
            vec!["spec.nodeSelector.matchExpressions[0]: operator In needs at least one value"],
        ),
        (
            "budget zero",
            json!({"drain": true, "maxConcurrentDrains": 0}),
            vec!["spec.maxConcurrentDrains: 0 must be at least 1"],
        ),
        (
            "budget above 100%",
            json!({"drain": true, "maxConcurrentDrains": "101%"}),
            vec!["spec.maxConcurrentDrains: \"101%\" must be a percentage between 1% and 100%"],
        ),
        (
            "budget without drain",
            json!({"maxConcurrentDrains": 2}),
            vec![
                "spec.maxConcurrentDrains: limits how many workspaces a drain stops at once; it needs drain: true",
            ],
        ),
        (
            "pause without drain",
            json!({"drainPaused": true}),
            vec!["spec.drainPaused: pauses a drain; it needs drain: true"],
        ),
    ];
    for (what, value, want) in cases {
        let got: Vec<String> = validate(&spec(value))
            .0
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got.len(), want.len(), "{what}: {got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.starts_with(w), "{what}: {g:?} does not start with {w:?}");
        }
    }
}

/// Whether a node with `labels` satisfies required `terms` (OR of ANDs), as the scheduler
/// reads them.
fn admits(terms: &[NodeSelectorTerm], labels: &BTreeMap<String, String>) -> bool {
    terms.iter().any(|t| {
        t.match_expressions.iter().flatten().all(|r| {
            let value = labels.get(&r.key);
            let values = r.values.clone().unwrap_or_default();
            match r.operator.as_str() {
                "In" => value.is_some_and(|v| values.contains(v)),
                "NotIn" => value.is_none_or(|v| !values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                other => panic!("operator {other}"),
            }
        })
    })
}

#[test]
fn avoid_terms_admit_exactly_the_nodes_the_selector_does_not_select() {
    let selector: LabelSelector = serde_json::from_value(json!({
        "matchLabels": {"pool": "a"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["z1", "z2"]},
            {"key": "spot", "operator": "DoesNotExist"}
        ]
    }))
    .expect("selector");
    let compiled = kube::core::Selector::try_from(selector.clone()).expect("compiles");
    let existing: Vec<NodeSelectorTerm> = serde_json::from_value(json!([
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "big", "operator": "In", "values": ["yes"]}]}
    ]))
    .expect("terms");
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let nodes = [
        labels(&[("pool", "a"), ("zone", "z1"), ("gpu", "1")]),
        labels(&[("pool", "b"), ("zone", "z1"), ("gpu", "1")]),
        labels(&[("pool", "a"), ("zone", "z3"), ("big", "yes")]),
        labels(&[("pool", "a"), ("zone", "z2"), ("spot", "1"), ("gpu", "1")]),
        labels(&[("zone", "z1"), ("gpu", "1")]),
        labels(&[("pool", "a"), ("zone", "z2"), ("big", "yes")]),
        labels(&[("pool", "b")]),
    ];
    use kube::core::SelectorExt;
    for node in &nodes {
        let avoided = compiled.matches(node);
        let plain = avoid_terms(&selector, &[]);
        assert_eq!(
            admits(&plain, node),
            !avoided,
            "no existing terms: {node:?}"
        );
        let combined = avoid_terms(&selector, &existing);
        assert_eq!(
            admits(&combined, node),
            !avoided && admits(&existing, node),
            "with existing terms: {node:?}"
        );
    }
}

#[test]
fn avoids_tells_a_steered_pod_from_one_admitted_before_the_window() {
    let selector: LabelSelector = serde_json::from_value(json!({
        "matchLabels": {"pool": "a"},
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]
    }))
    .expect("selector");
    let other: LabelSelector =
        serde_json::from_value(json!({"matchLabels": {"pool": "b"}})).expect("selector");
    let terms = |value: serde_json::Value| -> Vec<NodeSelectorTerm> {
        serde_json::from_value(value).expect("terms")
    };
    let own = terms(json!([
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "big", "operator": "In", "values": ["yes"]}]}
    ]));
    // (what, the pod's required terms, kept off the selector's nodes)
    let cases = [
        ("no required affinity", vec![], false),
        ("its own terms only", own.clone(), false),
        ("steered", avoid_terms(&selector, &[]), true),
        (
            "steered, with its own terms",
            avoid_terms(&selector, &own),
            true,
        ),
        (
            "steered off another window's nodes only",
            avoid_terms(&other, &own),
            false,
        ),
        (
            "steered off both windows' nodes",
            avoid_terms(&other, &avoid_terms(&selector, &own)),
            true,
        ),
        (
            "one term steered, one not: the other term still admits the nodes",
            {
                let mut t = avoid_terms(&selector, &own[..1]);
                t.push(own[1].clone());
                t
            },
            false,
        ),
    ];
    for (what, pod_terms, kept_off) in cases {
        assert_eq!(avoids(&selector, &pod_terms), kept_off, "{what}");
    }
    let everything = LabelSelector::default();
    assert!(
        !avoids(&everything, &avoid_terms(&everything, &[])),
        "a selector without requirements gives no terms to check"
    );
}
