//! Updates that only touch metadata, or come with deletion, never depend on validation
//! (issue 12 item 4). Each case is a whole AdmissionReview as the API server sends it, run
//! through parsing and the decision, so the byte comparison of `spec` is exercised too.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::decision::Decision;
use crate::decision::{Inputs, NamespaceLabels, validate};
use crate::review;

/// Rejected by validation: a Workspace needs at least one container.
fn invalid_spec() -> Value {
    json!({"podTemplate": {"spec": {"containers": []}}})
}

fn valid_spec() -> Value {
    json!({"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "busybox"}]}}})
}

fn workspace(spec: Value, metadata: Value) -> Value {
    json!({"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "metadata": metadata, "spec": spec})
}

fn review(kind: &str, operation: &str, object: Value, old: Option<Value>) -> Vec<u8> {
    let mut request = json!({
        "uid": "u-1", "kind": {"group": "lifeguard.dev", "version": "v1alpha1", "kind": kind},
        "operation": operation, "namespace": "team-a", "name": "a",
        "userInfo": {"username": "system:serviceaccount:lifeguard-system:lifeguard-controller"},
        "object": object,
    });
    if let Some(old) = old {
        request["oldObject"] = old;
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
        .to_string()
        .into_bytes()
}

fn decide(body: &[u8]) -> Decision {
    let request = review::parse(body).expect("a well-formed review");
    let namespace = NamespaceLabels::Known(Default::default());
    let context = Inputs {
        windows: &[],
        namespace: &namespace,
        now: Timestamp::UNIX_EPOCH,
        recreation_users: &[],
    };
    validate(&request, &context)
}

fn allowed(outcome: &Decision) -> bool {
    matches!(outcome, Decision::Allow)
}

/// (what, kind, operation, object, oldObject, allowed?)
type Case = (
    &'static str,
    &'static str,
    &'static str,
    Value,
    Option<Value>,
    bool,
);

#[test]
fn updates_that_keep_the_spec_or_delete_skip_validation() {
    let plain = json!({"name": "a"});
    let with_finalizer = json!({"name": "a", "finalizers": ["lifeguard.dev/cleanup"]});
    let drained = json!({"name": "a", "annotations": {"lifeguard.dev/drain": "upgrade"}});
    let deleting = json!({"name": "a", "deletionTimestamp": "2026-11-23T20:00:00Z"});
    let window_spec =
        json!({"schedule": "0 22 * * *", "duration": "2h", "timeZone": "Mars/Olympus"});
    let cases: Vec<Case> = vec![
        (
            "finalizer removed from a Workspace whose stored spec is invalid",
            "Workspace",
            "UPDATE",
            workspace(invalid_spec(), plain.clone()),
            Some(workspace(invalid_spec(), with_finalizer.clone())),
            true,
        ),
        (
            "drain annotation added to an invalid Workspace",
            "Workspace",
            "UPDATE",
            workspace(invalid_spec(), drained),
            Some(workspace(invalid_spec(), plain.clone())),
            true,
        ),
        (
            "spec edited while the Workspace is being deleted",
            "Workspace",
            "UPDATE",
            workspace(invalid_spec(), deleting.clone()),
            Some(workspace(valid_spec(), deleting)),
            true,
        ),
        (
            "spec edited to something invalid",
            "Workspace",
            "UPDATE",
            workspace(invalid_spec(), plain.clone()),
            Some(workspace(valid_spec(), plain.clone())),
            false,
        ),
        (
            "update without an oldObject is validated",
            "Workspace",
            "UPDATE",
            workspace(invalid_spec(), plain.clone()),
            None,
            false,
        ),
        (
            "create of an invalid Workspace is still denied",
            "Workspace",
            "CREATE",
            workspace(invalid_spec(), plain.clone()),
            None,
            false,
        ),
        (
            "create with a deletionTimestamp is not a deletion",
            "Workspace",
            "CREATE",
            workspace(
                invalid_spec(),
                json!({"name": "a", "deletionTimestamp": "2026-11-23T20:00:00Z"}),
            ),
            None,
            false,
        ),
        (
            "finalizer removed from an invalid MaintenanceWindow",
            "MaintenanceWindow",
            "UPDATE",
            json!({"metadata": plain.clone(), "spec": window_spec.clone()}),
            Some(json!({"metadata": with_finalizer, "spec": window_spec.clone()})),
            true,
        ),
        (
            "MaintenanceWindow spec edited to something invalid",
            "MaintenanceWindow",
            "UPDATE",
            json!({"metadata": plain.clone(), "spec": window_spec}),
            Some(
                json!({"metadata": plain, "spec": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"}}),
            ),
            false,
        ),
    ];
    for (what, kind, operation, object, old, expect_allowed) in cases {
        let outcome = decide(&review(kind, operation, object, old));
        assert_eq!(allowed(&outcome), expect_allowed, "{what}: {outcome:?}");
        if !expect_allowed {
            assert!(
                matches!(&outcome, Decision::Deny { code: 422, .. }),
                "{what}: denied as invalid, got {outcome:?}"
            );
        }
    }
}

#[test]
fn spec_is_compared_byte_for_byte() {
    let old = workspace(valid_spec(), json!({"name": "a"}));
    let bare = json!({"metadata": {"name": "a"}});
    // (what, object, oldObject, spec unchanged?)
    let cases: Vec<(&str, Value, Value, bool)> = vec![
        (
            "identical spec, new label",
            workspace(valid_spec(), json!({"name": "a", "labels": {"x": "y"}})),
            old.clone(),
            true,
        ),
        (
            "image changed",
            workspace(
                json!({"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "alpine"}]}}}),
                json!({"name": "a"}),
            ),
            old.clone(),
            false,
        ),
        ("spec removed", bare.clone(), old.clone(), false),
        ("no spec on either side", bare.clone(), bare, true),
    ];
    for (what, object, old, unchanged) in cases {
        let request = review::parse(&review("Workspace", "UPDATE", object, Some(old)))
            .expect("a well-formed review");
        assert_eq!(request.spec_unchanged, unchanged, "{what}");
    }

    // Same meaning, other bytes (key order): counted as a change, so it is validated. Erring
    // this way only costs a validation; the API server encodes both sides alike anyway.
    let body =
        String::from_utf8(review("Workspace", "UPDATE", old.clone(), Some(old))).expect("utf-8");
    let (sorted, unsorted) = (
        r#"{"image":"busybox","name":"ide"}"#,
        r#"{"name":"ide","image":"busybox"}"#,
    );
    let reordered = if body.contains(sorted) {
        body.replacen(sorted, unsorted, 1)
    } else {
        body.replacen(unsorted, sorted, 1)
    };
    assert_ne!(
        reordered, body,
        "the test body has the container as expected"
    );
    let request = review::parse(reordered.as_bytes()).expect("a well-formed review");
    assert!(!request.spec_unchanged, "reordered keys count as a change");
}

#[test]
fn a_postpone_request_is_checked_whenever_a_write_changes_it() {
    let meta =
        |value: Value| json!({"name": "a", "annotations": {"lifeguard.dev/postpone-drain": value}});
    let plain = json!({"name": "a"});
    let deleting = json!({"name": "a", "deletionTimestamp": "2026-11-23T20:00:00Z",
                          "annotations": {"lifeguard.dev/postpone-drain": "someday"}});
    let cases: Vec<Case> = vec![
        (
            "set to a duration",
            "Workspace",
            "UPDATE",
            workspace(valid_spec(), meta(json!("30m"))),
            Some(workspace(valid_spec(), plain.clone())),
            true,
        ),
        (
            "set to something that is not a duration",
            "Workspace",
            "UPDATE",
            workspace(valid_spec(), meta(json!("someday"))),
            Some(workspace(valid_spec(), plain.clone())),
            false,
        ),
        (
            "changed to over a day",
            "Workspace",
            "UPDATE",
            workspace(valid_spec(), meta(json!("48h"))),
            Some(workspace(valid_spec(), meta(json!("30m")))),
            false,
        ),
        (
            "a stored bad request, unchanged, never blocks a finalizer's removal",
            "Workspace",
            "UPDATE",
            workspace(valid_spec(), meta(json!("someday"))),
            Some(workspace(
                valid_spec(),
                json!({"name": "a", "finalizers": ["lifeguard.dev/cleanup"],
                       "annotations": {"lifeguard.dev/postpone-drain": "someday"}}),
            )),
            true,
        ),
        (
            "withdrawn",
            "Workspace",
            "UPDATE",
            workspace(valid_spec(), plain.clone()),
            Some(workspace(valid_spec(), meta(json!("someday")))),
            true,
        ),
        (
            "being deleted",
            "Workspace",
            "UPDATE",
            workspace(valid_spec(), deleting),
            Some(workspace(valid_spec(), plain.clone())),
            true,
        ),
        (
            "created with a bad one",
            "Workspace",
            "CREATE",
            workspace(valid_spec(), meta(json!("someday"))),
            None,
            false,
        ),
    ];
    for (what, kind, operation, object, old, want) in cases {
        let outcome = decide(&review(kind, operation, object, old));
        assert_eq!(allowed(&outcome), want, "{what}: {outcome:?}");
        if !want {
            assert!(
                format!("{outcome:?}").contains("lifeguard.dev/postpone-drain"),
                "{what}: {outcome:?}"
            );
        }
    }
}
