//! A pod of the workspace's name that the Workspace does not control (by owner UID), and
//! `observedGeneration` reporting only the spec the pod was built from.

use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::Workspace;
use serde_json::{Value, json};

use crate::workspace::plan::plan_tests::{NOW, kind, now, pod, rejected_condition, ws};
use crate::workspace::plan::{Action, Settings, plan};

fn conflict(status: &lifeguard_api::WorkspaceStatus) -> Option<(String, String)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodConflict")
        .map(|c| (c.status.clone(), c.message.clone()))
}

#[test]
fn a_pod_this_workspace_does_not_control_is_never_adopted_or_touched() {
    let settings = Settings::default();
    let stranger = |status: Value, meta: Value| {
        let mut p = pod(status, meta);
        p.metadata.owner_references = None;
        p
    };
    let predecessor = |status: Value| {
        pod(
            status,
            json!({"ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                                        "name": "alice", "uid": "old-uid", "controller": true}]}),
        )
    };
    let running = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
    let rejected = json!({"phase": "Failed", "reason": "NodeAffinity", "message": "m"});
    let workspace_states = [
        ("new", ws(json!(null), json!({}))),
        (
            "running",
            ws(json!({"phase": "Running", "podStarts": 1}), json!({})),
        ),
        (
            "deleting",
            ws(
                json!({"phase": "Running", "podStarts": 1}),
                json!({"deletionTimestamp": NOW}),
            ),
        ),
        (
            "drained",
            ws(
                json!({"phase": "Running", "podStarts": 1}),
                json!({"annotations": {"lifeguard.dev/drained-by": "upgrade"}}),
            ),
        ),
        (
            "rejected, backoff over",
            ws(
                json!({"phase": "Pending", "podStarts": 1, "podDeletionTime": "2026-12-01T11:00:00Z",
                       "conditions": rejected_condition("True")}),
                json!({}),
            ),
        ),
    ];
    let foreign_pods = [
        (
            "stranger's running pod",
            stranger(running.clone(), json!({})),
        ),
        (
            "stranger's deleting pod",
            stranger(running.clone(), json!({"deletionTimestamp": NOW})),
        ),
        (
            "stranger's rejected pod",
            stranger(rejected.clone(), json!({})),
        ),
        ("predecessor's running pod", predecessor(running.clone())),
        ("predecessor's rejected pod", predecessor(rejected)),
    ];
    for (state, workspace) in &workspace_states {
        for (which, foreign) in &foreign_pods {
            let action = plan(workspace, Some(foreign), now(), &settings);
            assert!(
                !matches!(
                    action,
                    Action::DeletePod { .. }
                        | Action::ReleasePod
                        | Action::RecordRejection(_)
                        | Action::CreatePod { .. }
                ),
                "{state} workspace, {which}: {}",
                kind(&action)
            );
        }
    }

    let cases: Vec<(&str, Workspace, Pod, String)> = vec![
        (
            "new workspace, name taken by a stranger: Pending with PodConflict",
            ws(json!(null), json!({})),
            stranger(running.clone(), json!({})),
            "UpdateStatus(Some(Pending))".into(),
        ),
        (
            "our pod was replaced by a stranger's: Stopped, as if deleted",
            ws(json!({"phase": "Running", "podStarts": 1}), json!({})),
            stranger(running.clone(), json!({})),
            "UpdateStatus(Some(Stopped))".into(),
        ),
        (
            "deleting with a stranger's pod: drop our finalizer, leave the pod",
            ws(
                json!({"phase": "Pending"}),
                json!({"deletionTimestamp": NOW}),
            ),
            stranger(running.clone(), json!({})),
            "RemoveWorkspaceFinalizer".into(),
        ),
    ];
    for (what, workspace, foreign, expected) in cases {
        assert_eq!(
            kind(&plan(&workspace, Some(&foreign), now(), &settings)),
            expected,
            "{what}"
        );
    }

    // The condition names the pod and its owner; once recorded the workspace only waits.
    let new = ws(json!(null), json!({}));
    let old = predecessor(running);
    let Action::UpdateStatus(status) = plan(&new, Some(&old), now(), &settings) else {
        panic!("expected UpdateStatus");
    };
    let (state, message) = conflict(&status).expect("PodConflict condition");
    assert_eq!(state, "True");
    assert!(
        message.contains("pod ws-alice") && message.contains("Workspace alice (uid old-uid)"),
        "{message}"
    );
    let recorded = ws(serde_json::to_value(&*status).expect("status"), json!({}));
    assert_eq!(
        kind(&plan(&recorded, Some(&old), now(), &settings)),
        "WaitUntil(2026-12-01T12:00:30Z)",
        "the other pod's deletion does not trigger this Workspace: look again"
    );
    // Name free again: our pod is created; once it is ours the conflict is resolved.
    assert_eq!(
        kind(&plan(&recorded, None, now(), &settings)),
        "CreatePod { start: 1, recreation: None }"
    );
    let ours = pod(json!({"phase": "Pending"}), json!({}));
    let Action::UpdateStatus(status) = plan(&recorded, Some(&ours), now(), &settings) else {
        panic!("expected UpdateStatus");
    };
    assert_eq!(conflict(&status).map(|c| c.0), Some("False".to_string()));
}

#[test]
fn observed_generation_is_the_spec_the_pod_was_built_from() {
    let settings = Settings::default();
    let edited = |generation: i64| {
        ws(
            json!({"phase": "Creating", "podStarts": 1, "observedGeneration": 1}),
            json!({"generation": generation}),
        )
    };
    let built_from = |generation: &str| {
        pod(
            json!({"phase": "Running"}),
            json!({"annotations": {"lifeguard.dev/start": "1", "lifeguard.dev/generation": generation}}),
        )
    };
    let cases = [
        (
            "spec edited after the pod was created",
            edited(3),
            built_from("1"),
            Some(1),
        ),
        (
            "pod built from the current spec",
            edited(3),
            built_from("3"),
            Some(3),
        ),
        (
            "pod from before the annotation: keeps what was recorded",
            edited(3),
            pod(json!({"phase": "Running"}), json!({})),
            Some(1),
        ),
    ];
    for (what, workspace, live, want) in cases {
        let Action::UpdateStatus(status) = plan(&workspace, Some(&live), now(), &settings) else {
            panic!("{what}: expected UpdateStatus");
        };
        assert_eq!(status.observed_generation, want, "{what}");
    }
}
