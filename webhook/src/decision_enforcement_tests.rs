//! `spec.enforcement`: what a `Warn` or `DryRun` window does to a start it covers, and
//! that it never steers.

use std::collections::BTreeMap;

use jiff::Timestamp;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::window::CompiledWindow;
use serde_json::{Value, json};

use crate::decision::Decision;
use crate::decision::{Inputs, NamespaceLabels, mutate, validate_audited};
use crate::review::{self, AdmissionRequest, Operation};

fn window(name: &str, enforcement: &str, extra: Value) -> CompiledWindow {
    let mut spec = json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
                          "message": "cluster upgrade", "enforcement": enforcement});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let window: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .expect("window literal");
    CompiledWindow::compile(&window).expect("window literal is valid")
}

fn request(kind: &str, object: Value) -> AdmissionRequest {
    let group = if kind == "Pod" { "" } else { "lifeguard.dev" };
    AdmissionRequest {
        uid: "uid-1".into(),
        group: group.into(),
        kind: kind.into(),
        operation: Operation::Create,
        namespace: Some("team-a".into()),
        name: None,
        object: Some(review::decode_object(group, kind, &object)),
        username: "someone".into(),
        spec_unchanged: false,
        old_postpone_request: None,
        dry_run: false,
    }
}

fn new_workspace() -> AdmissionRequest {
    request(
        "Workspace",
        json!({"metadata": {"name": "alice"},
               "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}}),
    )
}

fn decide(windows: &[CompiledWindow], request: &AdmissionRequest) -> (Decision, Vec<String>) {
    let namespace = NamespaceLabels::Known(BTreeMap::new());
    let context = Inputs {
        windows,
        namespace: &namespace,
        now: "2026-12-01T22:30:00Z".parse::<Timestamp>().expect("time"),
        recreation_users: &[],
    };
    validate_audited(request, &context)
}

#[test]
fn each_mode_decides_a_covered_start_and_reports_what_it_would_have_denied() {
    type Row = (
        &'static str,
        Vec<CompiledWindow>,
        &'static str,
        Vec<&'static str>,
    );
    let rows: Vec<Row> = vec![
        (
            "Enforce denies",
            vec![window("w", "Enforce", json!({}))],
            "deny",
            vec![],
        ),
        (
            "Warn admits with a warning",
            vec![window("w", "Warn", json!({}))],
            "warn",
            vec!["w"],
        ),
        (
            "DryRun admits silently",
            vec![window("w", "DryRun", json!({}))],
            "allow",
            vec!["w"],
        ),
        (
            "Enforce beside DryRun: denied, the DryRun one still counted",
            vec![
                window("e", "Enforce", json!({})),
                window("d", "DryRun", json!({})),
            ],
            "deny",
            vec!["d"],
        ),
        (
            "a DryRun window that does not cover the workspace counts nothing",
            vec![window(
                "d",
                "DryRun",
                json!({"workspaceSelector": {"matchLabels": {"team": "red"}}}),
            )],
            "allow",
            vec![],
        ),
    ];
    for (what, windows, expected, counted) in rows {
        let (decision, would_deny) = decide(&windows, &new_workspace());
        let got = match &decision {
            Decision::Allow => "allow",
            Decision::Warn(_) => "warn",
            Decision::Deny { .. } => "deny",
            Decision::Patch(_) => "patch",
        };
        assert_eq!(got, expected, "{what}: {decision:?}");
        assert_eq!(would_deny, counted, "{what}");
    }
}

#[test]
fn the_warning_names_the_window_its_message_and_its_end() {
    let (decision, _) = decide(&[window("upgrade", "Warn", json!({}))], &new_workspace());
    let Decision::Warn(warnings) = decision else {
        panic!("expected a warning, got {decision:?}");
    };
    let [warning] = warnings.as_slice() else {
        panic!("one warning expected: {warnings:?}");
    };
    for fact in [
        "\"upgrade\"",
        "Warn",
        "2026-12-01T23:00:00Z",
        "cluster upgrade",
    ] {
        assert!(warning.contains(fact), "{warning:?} lacks {fact}");
    }
}

#[test]
fn node_scoped_windows_steer_only_when_enforced() {
    let pod = json!({
        "metadata": {"labels": {"lifeguard.dev/workspace": "alice"}, "finalizers": ["lifeguard.dev/disposal"]},
        "spec": {"containers": [{"name": "ide", "image": "busybox"}]}
    });
    let node_2 = json!({"nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "node-2"}}});
    for (mode, steers) in [("Enforce", true), ("Warn", false), ("DryRun", false)] {
        let windows = vec![window("pool", mode, node_2.clone())];
        let namespace = NamespaceLabels::Known(BTreeMap::new());
        let context = Inputs {
            windows: &windows,
            namespace: &namespace,
            now: "2026-12-01T22:30:00Z".parse::<Timestamp>().expect("time"),
            recreation_users: &[],
        };
        let decision = mutate(&request("Pod", pod.clone()), &context);
        assert_eq!(
            matches!(decision, Decision::Patch(_)),
            steers,
            "{mode}: {decision:?}"
        );
    }
}
