use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

fn meta(v: serde_json::Value) -> ObjectMeta {
    serde_json::from_value(v).expect("metadata literal")
}

fn base() -> serde_json::Value {
    json!({"name": "ws", "namespace": "dev", "uid": "u1", "generation": 1,
           "resourceVersion": "10", "labels": {"team": "a"},
           "annotations": {"note": "x"}, "finalizers": ["lifeguard.dev/workspace"]})
}

#[test]
fn which_changes_call_for_a_reconcile() {
    let before = fingerprint(&meta(base()));
    let changed = |what: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = base();
        edit(&mut v);
        (what.to_string(), fingerprint(&meta(v)) != before)
    };
    let cases = [
        // The controller's own status write moves only the resourceVersion (and
        // managedFields): no reconcile for it.
        (
            changed("status write", &|v| {
                v["resourceVersion"] = json!("11");
                v["managedFields"] =
                    json!([{"manager": "lifeguard-controller", "operation": "Apply"}]);
            }),
            false,
        ),
        (
            changed("spec change", &|v| v["generation"] = json!(2)),
            true,
        ),
        (
            changed("label", &|v| v["labels"]["team"] = json!("b")),
            true,
        ),
        (
            changed("drain annotation", &|v| {
                v["annotations"]["lifeguard.dev/drained-by"] = json!("upgrade")
            }),
            true,
        ),
        (
            changed("finalizer removed", &|v| v["finalizers"] = json!([])),
            true,
        ),
        (
            changed("deleted", &|v| {
                v["deletionTimestamp"] = json!("2026-11-25T10:00:00Z")
            }),
            true,
        ),
        (
            changed("re-created under the same name", &|v| {
                v["uid"] = json!("u2")
            }),
            true,
        ),
    ];
    for ((what, got), want) in cases {
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn the_predicate_reads_the_fingerprint_back() {
    let mut cached: PartialObjectMeta<Workspace> = PartialObjectMeta {
        types: None,
        metadata: ObjectMeta::default(),
        _phantom: Default::default(),
    };
    assert_eq!(fingerprint_in_generation(&cached), None);
    let mut m = meta(base());
    m.deletion_timestamp = Some(Time("2026-11-25T10:00:00Z".parse().expect("time")));
    let f = fingerprint(&m);
    cached.metadata.generation = Some(f);
    assert_eq!(fingerprint_in_generation(&cached), Some(f as u64));
}

#[test]
fn a_receipt_wakes_the_workspace_of_the_pod_that_owns_it() {
    let receipt = |v: serde_json::Value| -> PartialObjectMeta<DisposalReceipt> {
        serde_json::from_value(
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": v}),
        )
        .expect("receipt literal")
    };
    let owner = |kind: &str, name: &str| json!([{"apiVersion": "v1", "kind": kind, "name": name, "uid": "u"}]);
    let cases = [
        (
            json!({"name": "u", "namespace": "dev", "ownerReferences": owner("Pod", "ws-alice")}),
            Some("alice"),
        ),
        (
            json!({"name": "u", "namespace": "dev", "ownerReferences": owner("Pod", "alice")}),
            None,
        ),
        (
            json!({"name": "u", "namespace": "dev", "ownerReferences": owner("ConfigMap", "ws-alice")}),
            None,
        ),
        (json!({"name": "u", "namespace": "dev"}), None),
        (
            json!({"name": "u", "ownerReferences": owner("Pod", "ws-alice")}),
            None,
        ),
    ];
    for (meta, want) in cases {
        let got = workspace_of_receipt(&receipt(meta.clone()));
        assert_eq!(got.as_ref().map(|r| r.name.as_str()), want, "{meta}");
        if let Some(r) = got {
            assert_eq!(r.namespace.as_deref(), Some("dev"));
        }
    }
}
