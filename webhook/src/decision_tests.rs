//! Table-driven tests of every admission decision.

use std::collections::BTreeMap;

use jiff::Timestamp;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::window::CompiledWindow;
use serde_json::{Value, json};

use crate::decision::{Decision, Inputs, NamespaceLabels, mutate, validate};
use crate::review::{self, AdmissionRequest, Operation};

const NOW: &str = "2026-12-01T22:30:00Z";

fn window(name: &str, spec: Value) -> CompiledWindow {
    let window: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .expect("window literal");
    CompiledWindow::compile(&window).expect("window literal is valid")
}

fn upgrade_window() -> CompiledWindow {
    window(
        "upgrade",
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
               "message": "cluster upgrade to 1.31"}),
    )
}

fn workspace_pod(labels: Value, annotations: Value, owners: Value) -> Value {
    json!({
        "metadata": {"labels": labels, "annotations": annotations, "ownerReferences": owners},
        "spec": {"containers": [{"name": "ide", "image": "busybox"}]}
    })
}

fn workspace(name: &str) -> Value {
    json!({
        "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
        "metadata": {"name": name, "labels": {"team": "blue"}},
        "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}
    })
}

fn request(group: &str, kind: &str, operation: Operation, object: Value) -> AdmissionRequest {
    AdmissionRequest {
        uid: "uid-1".into(),
        group: group.into(),
        kind: kind.into(),
        operation,
        namespace: Some("team-a".into()),
        name: None,
        object: Some(review::decode_object(group, kind, &object)),
        username: "controller".into(),
        spec_unchanged: false,
        old_postpone_request: None,
        dry_run: false,
    }
}

fn owner() -> Value {
    json!([{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "alice", "uid": "u"}])
}

/// (what, request, windows in the cache, trusted re-creation users, expected verdict)
type Case<'a> = (
    &'a str,
    AdmissionRequest,
    &'a Vec<CompiledWindow>,
    &'a [String],
    Expect,
);

#[derive(Debug, PartialEq)]
enum Expect {
    Allow,
    DenyMaintenance,
    DenyInvalid,
}

fn verdict(outcome: &Decision) -> Expect {
    match outcome {
        Decision::Allow | Decision::Warn(_) | Decision::Patch(_) => Expect::Allow,
        Decision::Deny { code: 403, .. } => Expect::DenyMaintenance,
        Decision::Deny { .. } => Expect::DenyInvalid,
    }
}

#[test]
fn validation_decisions() {
    let ws_label = json!({"lifeguard.dev/workspace": "alice"});
    let recreation = json!({"lifeguard.dev/recreation": "1", "lifeguard.dev/start": "2"});
    // What a pod built from a template carrying the marker looked like before the
    // controller dropped template keys: the marker on the workspace's first start.
    let forged_first_start = json!({"lifeguard.dev/recreation": "1", "lifeguard.dev/start": "1"});
    let no_start = json!({"lifeguard.dev/recreation": "1"});
    let bad_attempt = json!({"lifeguard.dev/recreation": "yes", "lifeguard.dev/start": "3"});
    let active = vec![upgrade_window()];
    let recreation_ok = vec![window(
        "upgrade",
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "allowRecreation": true}),
    )];
    let suspended = vec![window(
        "upgrade",
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "suspend": true}),
    )];
    let other_namespaces = vec![window(
        "upgrade",
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
               "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    )];
    let red_team_only = vec![window(
        "upgrade",
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
               "workspaceSelector": {"matchLabels": {"team": "red"}}}),
    )];
    let over = vec![window(
        "upgrade",
        json!({"start": "2026-12-01T20:00:00Z", "end": "2026-12-01T22:30:00Z"}),
    )];
    let none: Vec<CompiledWindow> = vec![];
    let other_user = ["system:serviceaccount:lifeguard-system:lifeguard-controller".to_string()];
    let this_user = ["controller".to_string()];
    let pod = |labels: &Value, annotations: &Value, owners: Value| {
        request(
            "",
            "Pod",
            Operation::Create,
            workspace_pod(labels.clone(), annotations.clone(), owners),
        )
    };
    let invalid_window = json!({"metadata": {"name": "w"}, "spec": {"schedule": "0 22 * * *"}});
    let cases: Vec<Case> = vec![
        (
            "workspace create, no window",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            &none,
            &[],
            Expect::Allow,
        ),
        (
            "workspace create, active window",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            &active,
            &[],
            Expect::DenyMaintenance,
        ),
        (
            "workspace update, active window",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Update,
                workspace("alice"),
            ),
            &active,
            &[],
            Expect::Allow,
        ),
        (
            "workspace create, window over",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            &over,
            &[],
            Expect::Allow,
        ),
        (
            "workspace create, window suspended",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            &suspended,
            &[],
            Expect::Allow,
        ),
        (
            "workspace create, namespace not covered",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            &other_namespaces,
            &[],
            Expect::Allow,
        ),
        (
            "workspace create, workspace labels not covered",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            &red_team_only,
            &[],
            Expect::Allow,
        ),
        (
            "invalid workspace",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                json!({"metadata": {"name": "a"}, "spec": {"podTemplate": {"spec": {"containers": []}}}}),
            ),
            &none,
            &[],
            Expect::DenyInvalid,
        ),
        (
            "workspace delete, active window",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Delete,
                workspace("alice"),
            ),
            &active,
            &[],
            Expect::Allow,
        ),
        (
            "workspace pod, active window",
            pod(&ws_label, &json!({}), owner()),
            &active,
            &[],
            Expect::DenyMaintenance,
        ),
        (
            "workspace pod, no window",
            pod(&ws_label, &json!({}), owner()),
            &none,
            &[],
            Expect::Allow,
        ),
        (
            "plain pod, active window",
            pod(&json!({"app": "web"}), &json!({}), json!([])),
            &active,
            &[],
            Expect::Allow,
        ),
        (
            "recreation, window allows it",
            pod(&ws_label, &recreation, owner()),
            &recreation_ok,
            &[],
            Expect::Allow,
        ),
        (
            "recreation, window forbids it",
            pod(&ws_label, &recreation, owner()),
            &active,
            &[],
            Expect::DenyMaintenance,
        ),
        (
            "recreation marker on a first start, by the trusted user",
            pod(&ws_label, &forged_first_start, owner()),
            &recreation_ok,
            &this_user,
            Expect::DenyMaintenance,
        ),
        (
            "recreation marker without a start number",
            pod(&ws_label, &no_start, owner()),
            &recreation_ok,
            &this_user,
            Expect::DenyMaintenance,
        ),
        (
            "recreation marker that is not an attempt number",
            pod(&ws_label, &bad_attempt, owner()),
            &recreation_ok,
            &this_user,
            Expect::DenyMaintenance,
        ),
        (
            "recreation without owner",
            pod(&ws_label, &recreation, json!([])),
            &recreation_ok,
            &[],
            Expect::DenyMaintenance,
        ),
        (
            "recreation by an untrusted user",
            pod(&ws_label, &recreation, owner()),
            &recreation_ok,
            &other_user,
            Expect::DenyMaintenance,
        ),
        (
            "recreation by the trusted user",
            pod(&ws_label, &recreation, owner()),
            &recreation_ok,
            &this_user,
            Expect::Allow,
        ),
        (
            "valid window",
            request(
                "lifeguard.dev",
                "MaintenanceWindow",
                Operation::Create,
                json!({"metadata": {"name": "w"}, "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"}}),
            ),
            &active,
            &[],
            Expect::Allow,
        ),
        (
            "invalid window",
            request(
                "lifeguard.dev",
                "MaintenanceWindow",
                Operation::Create,
                invalid_window.clone(),
            ),
            &none,
            &[],
            Expect::DenyInvalid,
        ),
        (
            "invalid window update",
            request(
                "lifeguard.dev",
                "MaintenanceWindow",
                Operation::Update,
                invalid_window,
            ),
            &none,
            &[],
            Expect::DenyInvalid,
        ),
        (
            "unrelated kind",
            request("apps", "Deployment", Operation::Create, json!({})),
            &active,
            &[],
            Expect::Allow,
        ),
    ];
    let labels = NamespaceLabels::Known(BTreeMap::from([("env".to_string(), "dev".to_string())]));
    for (name, request, windows, users, expected) in cases {
        let context = Inputs {
            windows,
            namespace: &labels,
            now: NOW.parse::<Timestamp>().expect("time"),
            recreation_users: users,
        };
        assert_eq!(verdict(&validate(&request, &context)), expected, "{name}");
    }
}

#[test]
fn denial_names_the_window_its_message_and_its_end() {
    let windows = vec![upgrade_window()];
    let context = Inputs {
        windows: &windows,
        namespace: &NamespaceLabels::Known(BTreeMap::new()),
        now: NOW.parse::<Timestamp>().expect("time"),
        recreation_users: &[],
    };
    let outcome = validate(
        &request(
            "lifeguard.dev",
            "Workspace",
            Operation::Create,
            workspace("alice"),
        ),
        &context,
    );
    let Decision::Deny { message, .. } = outcome else {
        panic!("expected a denial, got {outcome:?}");
    };
    assert!(message.contains("\"upgrade\""), "{message}");
    assert!(message.contains("2026-12-01T23:00:00Z"), "{message}");
    assert!(message.contains("cluster upgrade to 1.31"), "{message}");
}

#[test]
fn invalid_objects_are_denied_with_the_reason() {
    let context = Inputs {
        windows: &[],
        namespace: &NamespaceLabels::Known(BTreeMap::new()),
        now: NOW.parse::<Timestamp>().expect("time"),
        recreation_users: &[],
    };
    let window = json!({"metadata": {"name": "w"}, "spec": {"schedule": "0 22 * * *", "duration": "2h", "timeZone": "Mars/Olympus"}});
    let outcome = validate(
        &request(
            "lifeguard.dev",
            "MaintenanceWindow",
            Operation::Create,
            window,
        ),
        &context,
    );
    let Decision::Deny { message, code, .. } = outcome else {
        panic!("expected a denial, got {outcome:?}");
    };
    assert_eq!(code, 422);
    assert!(message.contains("Mars/Olympus"), "{message}");
}

#[test]
fn a_schedule_using_an_extension_is_admitted_with_a_warning() {
    let context = Inputs {
        windows: &[],
        namespace: &NamespaceLabels::Known(BTreeMap::new()),
        now: NOW.parse::<Timestamp>().expect("time"),
        recreation_users: &[],
    };
    let window = |schedule: &str| {
        request(
            "lifeguard.dev",
            "MaintenanceWindow",
            Operation::Create,
            json!({"metadata": {"name": "w"}, "spec": {"schedule": schedule, "duration": "2h"}}),
        )
    };
    let outcome = validate(&window("0 22 L * *"), &context);
    let Decision::Warn(warnings) = &outcome else {
        panic!("expected a warning, got {outcome:?}");
    };
    assert_eq!(
        warnings,
        &[
            "spec.schedule uses lifeguard's extension L (last day of the month), which Kubernetes CronJob does not accept"
        ]
    );
    assert_eq!(outcome.decision(), "allowed");
    // A schedule copied from a CronJob gets no warning.
    assert_eq!(validate(&window("@weekly"), &context), Decision::Allow);
}

#[test]
fn finalizer_stamping() {
    let ws = json!({"lifeguard.dev/workspace": "alice"});
    let pod_with = |finalizers: Value| {
        let mut pod = workspace_pod(ws.clone(), json!({}), json!([]));
        pod["metadata"]["finalizers"] = finalizers;
        request("", "Pod", Operation::Create, pod)
    };
    let workspace_with = |finalizers: Value| {
        let mut object = workspace("alice");
        object["metadata"]["finalizers"] = finalizers;
        request("lifeguard.dev", "Workspace", Operation::Create, object)
    };
    let cases: Vec<(&str, AdmissionRequest, Decision)> = vec![
        (
            "no finalizers",
            request(
                "",
                "Pod",
                Operation::Create,
                workspace_pod(ws.clone(), json!({}), json!([])),
            ),
            patch(
                json!({"op": "add", "path": "/metadata/finalizers", "value": ["lifeguard.dev/disposal"]}),
            ),
        ),
        (
            "foreign finalizer kept, ours appended",
            pod_with(json!(["example.com/keep"])),
            patch(
                json!({"op": "add", "path": "/metadata/finalizers/-", "value": "lifeguard.dev/disposal"}),
            ),
        ),
        (
            "already stamped",
            pod_with(json!(["example.com/keep", "lifeguard.dev/disposal"])),
            Decision::Allow,
        ),
        (
            "null finalizers",
            pod_with(Value::Null),
            patch(
                json!({"op": "add", "path": "/metadata/finalizers", "value": ["lifeguard.dev/disposal"]}),
            ),
        ),
        (
            "not a workspace pod",
            request(
                "",
                "Pod",
                Operation::Create,
                workspace_pod(json!({"app": "x"}), json!({}), json!([])),
            ),
            Decision::Allow,
        ),
        (
            "update is left alone",
            request(
                "",
                "Pod",
                Operation::Update,
                workspace_pod(ws.clone(), json!({}), json!([])),
            ),
            Decision::Allow,
        ),
        (
            "a new Workspace gets the workspace finalizer",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            patch(
                json!({"op": "add", "path": "/metadata/finalizers", "value": ["lifeguard.dev/workspace"]}),
            ),
        ),
        (
            "a new Workspace keeps its other finalizers",
            workspace_with(json!(["example.com/keep"])),
            patch(
                json!({"op": "add", "path": "/metadata/finalizers/-", "value": "lifeguard.dev/workspace"}),
            ),
        ),
        (
            "a Workspace stamped already",
            workspace_with(json!(["lifeguard.dev/workspace"])),
            Decision::Allow,
        ),
        (
            "a Workspace update is left alone (the controller owns its finalizer then)",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Update,
                workspace("alice"),
            ),
            Decision::Allow,
        ),
        (
            "a MaintenanceWindow gets nothing",
            request(
                "lifeguard.dev",
                "MaintenanceWindow",
                Operation::Create,
                json!({"metadata": {"name": "upgrade"}, "spec": {}}),
            ),
            Decision::Allow,
        ),
    ];
    let context = Inputs {
        windows: &[],
        namespace: &NamespaceLabels::Known(BTreeMap::new()),
        now: NOW.parse::<Timestamp>().expect("time"),
        recreation_users: &[],
    };
    for (name, request, expected) in cases {
        assert_eq!(mutate(&request, &context), expected, "{name}");
    }
}

#[test]
fn workspace_selector_sees_the_workspace_labels_on_both_paths() {
    let windows = vec![window(
        "gpu-drain",
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
               "workspaceSelector": {"matchLabels": {"team": "red"}}}),
    )];
    let red_workspace = {
        let mut ws = workspace("alice");
        ws["metadata"]["labels"] = json!({"team": "red"});
        ws
    };
    let pod_of = |workspace_labels: &str, pod_labels: Value| {
        let mut labels = pod_labels;
        labels["lifeguard.dev/workspace"] = json!("alice");
        request(
            "",
            "Pod",
            Operation::Create,
            workspace_pod(
                labels,
                json!({"lifeguard.dev/start": "1", "lifeguard.dev/workspace-labels": workspace_labels}),
                owner(),
            ),
        )
    };
    let cases: Vec<(&str, AdmissionRequest, Expect)> = vec![
        (
            "red Workspace",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                red_workspace,
            ),
            Expect::DenyMaintenance,
        ),
        (
            "its pod, whose template has no team label",
            pod_of(r#"{"team":"red"}"#, json!({})),
            Expect::DenyMaintenance,
        ),
        (
            "blue Workspace",
            request(
                "lifeguard.dev",
                "Workspace",
                Operation::Create,
                workspace("alice"),
            ),
            Expect::Allow,
        ),
        (
            "its pod, whose template says team=red",
            pod_of(r#"{"team":"blue"}"#, json!({"team": "red"})),
            Expect::Allow,
        ),
        (
            "pod of an older controller (no annotation): its own labels",
            request(
                "",
                "Pod",
                Operation::Create,
                workspace_pod(
                    json!({"lifeguard.dev/workspace": "alice", "team": "red"}),
                    json!({}),
                    owner(),
                ),
            ),
            Expect::DenyMaintenance,
        ),
    ];
    for (name, request, expected) in cases {
        let context = Inputs {
            windows: &windows,
            namespace: &NamespaceLabels::Known(BTreeMap::new()),
            now: NOW.parse::<Timestamp>().expect("time"),
            recreation_users: &[],
        };
        assert_eq!(verdict(&validate(&request, &context)), expected, "{name}");
    }
}

/// (what, windows, namespace, verdict, facts the denial must carry)
type NamespaceCase<'a> = (
    &'a str,
    Vec<CompiledWindow>,
    &'a NamespaceLabels,
    Expect,
    Vec<&'a str>,
);

#[test]
fn unknown_namespace_labels_fail_closed_for_namespace_selectors() {
    let prod_only = window(
        "prod-upgrade",
        json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z",
               "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    );
    let everywhere = upgrade_window();
    let later = window(
        "later",
        json!({"start": "2026-12-02T22:00:00Z", "end": "2026-12-02T23:00:00Z",
               "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    );
    let unknown = NamespaceLabels::Unknown {
        namespace: "team-a".into(),
        reason: "no answer from the API server within 2s".into(),
    };
    let prod = NamespaceLabels::Known(BTreeMap::from([("env".into(), "prod".into())]));
    let dev = NamespaceLabels::Known(BTreeMap::from([("env".into(), "dev".into())]));
    let unlabelled = NamespaceLabels::Known(BTreeMap::new());
    let ws = || {
        request(
            "lifeguard.dev",
            "Workspace",
            Operation::Create,
            workspace("alice"),
        )
    };
    let cases: Vec<NamespaceCase> = vec![
        (
            "namespace selector, labels unknown: denied, saying why",
            vec![prod_only.clone()],
            &unknown,
            Expect::DenyMaintenance,
            vec![
                "prod-upgrade",
                "\"team-a\"",
                "could not be read",
                "within 2s",
            ],
        ),
        (
            "namespace selector, labels known to match",
            vec![prod_only.clone()],
            &prod,
            Expect::DenyMaintenance,
            vec!["prod-upgrade"],
        ),
        (
            "namespace selector, labels known not to match",
            vec![prod_only.clone()],
            &dev,
            Expect::Allow,
            vec![],
        ),
        (
            "namespace selector, namespace known to be unlabelled",
            vec![prod_only],
            &unlabelled,
            Expect::Allow,
            vec![],
        ),
        (
            "no namespace selector, labels unknown: as always",
            vec![everywhere.clone()],
            &unknown,
            Expect::DenyMaintenance,
            vec!["upgrade"],
        ),
        (
            "labels unknown, but no window active",
            vec![later],
            &unknown,
            Expect::Allow,
            vec![],
        ),
    ];
    for (what, windows, namespace, expected, facts) in cases {
        let context = Inputs {
            windows: &windows,
            namespace,
            now: NOW.parse::<Timestamp>().expect("time"),
            recreation_users: &[],
        };
        let outcome = validate(&ws(), &context);
        assert_eq!(verdict(&outcome), expected, "{what}");
        if let Decision::Deny { message, .. } = &outcome {
            for fact in facts {
                assert!(message.contains(fact), "{what}: {message:?} lacks {fact:?}");
            }
        }
    }
}

#[test]
fn the_namespace_is_looked_up_only_when_an_active_window_selects_namespaces() {
    let now: Timestamp = NOW.parse().expect("time");
    let selecting = |name: &str, start: &str, end: &str| {
        window(
            name,
            json!({"start": start, "end": end,
                   "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
        )
    };
    let active = selecting("prod-now", "2026-12-01T22:00:00Z", "2026-12-01T23:00:00Z");
    let later = selecting("prod-later", "2026-12-02T22:00:00Z", "2026-12-02T23:00:00Z");
    let cases = vec![
        ("no windows", vec![], false),
        (
            "an active window for every namespace",
            vec![upgrade_window()],
            false,
        ),
        (
            "a namespace selector, not active",
            vec![later.clone()],
            false,
        ),
        ("a namespace selector, active", vec![active.clone()], true),
        ("among others", vec![upgrade_window(), later, active], true),
    ];
    for (what, windows, needed) in cases {
        assert_eq!(
            crate::decision::needs_namespace_labels(&windows, now),
            needed,
            "{what}"
        );
    }
    // Should a decision read labels it did not look up, it fails closed, as for unknown.
    let windows = vec![selecting(
        "prod-now",
        "2026-12-01T22:00:00Z",
        "2026-12-01T23:00:00Z",
    )];
    let context = Inputs {
        windows: &windows,
        namespace: &NamespaceLabels::NotLookedUp,
        now,
        recreation_users: &[],
    };
    let ws = request(
        "lifeguard.dev",
        "Workspace",
        Operation::Create,
        workspace("alice"),
    );
    assert_eq!(verdict(&validate(&ws, &context)), Expect::DenyMaintenance);
}

/// A JSON Patch of the one operation `op`, as the tests write it.
fn patch(op: Value) -> Decision {
    Decision::Patch(serde_json::from_value(json!([op])).expect("JSON Patch literal"))
}
