//! A pod created before a node-scoped window opened, through the whole replacement: the
//! status says why, the pod goes without grace or disposal wait, a new one is created; and
//! every pod steering must leave alone.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::node_scope::avoid_terms;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, WorkspacePhase};
use serde_json::{Value, json};

use super::*;
use crate::workspace::plan::plan_tests::{kind, ws};
use crate::workspace::plan::{Observed, Settings, plan_observed};

const DURING: &str = "2026-12-01T22:30:00Z";
const BEFORE: &str = "2026-12-01T21:00:00Z";

fn at(t: &str) -> Timestamp {
    t.parse().expect("time")
}

/// A one-hour window `pool-a-upgrade` over the nodes labelled `pool: a`, with `extra`.
fn pool_a(extra: Value) -> CompiledWindow {
    let mut spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
                          "drain": true, "nodeSelector": {"matchLabels": {"pool": "a"}}});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    let w: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": "pool-a-upgrade"}, "spec": spec}))
            .expect("window literal");
    CompiledWindow::compile(&w).expect("valid window")
}

/// The workspace's pod: `node` its node (`None`: unscheduled), `steered` whether the webhook
/// gave it the affinity that keeps it off pool a, `deleted` whether it is being deleted.
fn pod_of(node: Option<&str>, phase: &str, steered: bool, deleted: bool) -> Pod {
    let mut meta = json!({"name": "ws-alice", "uid": "pod-uid-1", "finalizers": ["lifeguard.dev/disposal"],
                          "creationTimestamp": "2026-12-01T21:50:00Z",
                          "ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                                               "name": "alice", "uid": "ws-uid", "controller": true}]});
    if deleted {
        meta["deletionTimestamp"] = json!("2026-12-01T22:30:00Z");
    }
    let mut spec = json!({"containers": []});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    if steered {
        let selector = pool_a(json!({})).node_label_selector.expect("node-scoped");
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": avoid_terms(&selector, &[])}}});
    }
    serde_json::from_value(json!({"metadata": meta, "spec": spec, "status": {"phase": phase}}))
        .expect("pod literal")
}

fn creating() -> Value {
    json!({"phase": "Creating", "podStarts": 1, "podName": "ws-alice"})
}

fn resteered() -> Value {
    json!({"phase": "Pending", "podStarts": 1, "podName": "ws-alice", "conditions": [
        {"type": "Ready", "status": "False", "reason": "Resteered",
         "message": "the pod was created before maintenance window pool-a-upgrade opened and could still be scheduled onto the nodes it selects; it is created again, kept off them",
         "lastTransitionTime": "2026-12-01T22:30:00Z", "observedGeneration": 1}]})
}

fn observed(windows: Vec<CompiledWindow>) -> Observed {
    Observed {
        steering: windows,
        ..Observed::default()
    }
}

#[test]
fn an_unsteered_unscheduled_pod_is_replaced_by_a_steered_one() {
    let settings = Settings::default();
    let windows = || vec![pool_a(json!({}))];
    let unplaced = pod_of(None, "Pending", false, false);

    // 1. The status says why first, so the replacement survives a restart in between.
    let first = plan_observed(
        &ws(creating(), json!({})),
        Some(&unplaced),
        &observed(windows()),
        at(DURING),
        &settings,
    );
    let Action::UpdateStatus(status) = &first else {
        panic!("expected the status first, got {first:?}");
    };
    assert_eq!(status.phase, Some(WorkspacePhase::Pending));
    assert!(resteering(status), "{status:?}");
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready condition");
    assert!(
        ready.message.contains("pool-a-upgrade"),
        "{}",
        ready.message
    );

    // 2. Then the pod goes, without grace: nothing ran in it.
    let second = plan_observed(
        &ws(resteered(), json!({})),
        Some(&unplaced),
        &observed(windows()),
        at(DURING),
        &settings,
    );
    match &second {
        Action::DeletePod {
            grace_seconds: Some(0),
            cause,
        } => assert!(cause.contains("pool-a-upgrade"), "{cause}"),
        other => panic!("expected a delete without grace, got {other:?}"),
    }

    // 3. Deleted and never scheduled: released at once, even when a backup agent is to
    //    confirm disposal (nothing ran to dispose of).
    let deleted = pod_of(None, "Pending", false, true);
    let mut confirming = deleted.clone();
    confirming.metadata.annotations = Some(
        [(
            lifeguard_api::names::DISPOSAL_CONFIRMATION_ANNOTATION.to_string(),
            lifeguard_api::disposal::CONFIRMATION_REQUIRED.to_string(),
        )]
        .into(),
    );
    for pod in [deleted, confirming] {
        let third = plan_observed(
            &ws(resteered(), json!({})),
            Some(&pod),
            &observed(Vec::new()),
            at(DURING),
            &settings,
        );
        assert_eq!(third, Action::ReleasePod);
    }

    // 4. Gone: created again (the webhook steers the new pod), not called stopped.
    let fourth = plan_observed(
        &ws(resteered(), json!({})),
        None,
        &Observed::default(),
        at(DURING),
        &settings,
    );
    assert_eq!(
        fourth,
        Action::CreatePod {
            start: 2,
            recreation: None
        }
    );
}

#[test]
fn steering_leaves_alone_what_is_not_an_unsteered_unscheduled_pod() {
    let settings = Settings::default();
    let on_node = pod_of(Some("node-a1"), "Pending", false, false);
    let steered = pod_of(None, "Pending", true, false);
    let unplaced = pod_of(None, "Pending", false, false);
    // (what, workspace meta, pod, windows covering it, at)
    let cases: Vec<(&str, Value, &Pod, Vec<CompiledWindow>, &str)> = vec![
        ("no window covers it", json!({}), &unplaced, vec![], DURING),
        (
            "the window has not opened",
            json!({}),
            &unplaced,
            vec![pool_a(json!({}))],
            BEFORE,
        ),
        (
            "a Warn window steers nothing",
            json!({}),
            &unplaced,
            vec![pool_a(json!({"enforcement": "Warn"}))],
            DURING,
        ),
        (
            "already steered by the webhook",
            json!({}),
            &steered,
            vec![pool_a(json!({}))],
            DURING,
        ),
        (
            "scheduled: the drain's, not steering's",
            json!({}),
            &on_node,
            vec![pool_a(json!({}))],
            DURING,
        ),
        (
            "the Workspace is being deleted: the stop path's",
            json!({"deletionTimestamp": "2026-12-01T22:29:00Z"}),
            &unplaced,
            vec![pool_a(json!({}))],
            DURING,
        ),
    ];
    for (what, meta, pod, windows, now) in cases {
        let action = plan_observed(
            &ws(creating(), meta),
            Some(pod),
            &observed(windows),
            at(now),
            &settings,
        );
        let steered_action = matches!(
            &action,
            Action::DeletePod {
                grace_seconds: Some(0),
                ..
            }
        ) || matches!(&action, Action::UpdateStatus(s) if resteering(s));
        assert!(!steered_action, "{what}: {}", kind(&action));
    }
}

#[test]
fn an_unscheduled_pod_is_looked_at_again_when_a_covering_window_opens() {
    let settings = Settings::default();
    let unplaced = pod_of(None, "Pending", false, false);
    let mut workspace = ws(creating(), json!({}));
    // The status the start step would write, so the plan only has a wait left to return.
    let Action::UpdateStatus(settled) = plan_observed(
        &workspace,
        Some(&unplaced),
        &observed(vec![pool_a(json!({}))]),
        at(BEFORE),
        &settings,
    ) else {
        panic!("expected the start's status first");
    };
    workspace.status = Some(*settled);
    let action = plan_observed(
        &workspace,
        Some(&unplaced),
        &observed(vec![pool_a(json!({}))]),
        at(BEFORE),
        &settings,
    );
    assert_eq!(action, Action::WaitUntil(at("2026-12-01T22:00:00Z")));
}
