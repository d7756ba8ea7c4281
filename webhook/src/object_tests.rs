//! Each metadata field, for every JSON shape it can come in: read as the decisions need
//! it, and anything of another shape read as absent, never as an error.

use serde_json::{Value, json};

use super::*;

fn metadata(fields: Value) -> ObjectMetadata {
    serde_json::from_value(fields).expect("metadata that is a JSON object always decodes")
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn labels_and_annotations_keep_their_string_entries() {
    // (what, value of the field, entries kept)
    let cases: Vec<(&str, Value, BTreeMap<String, String>)> = vec![
        (
            "strings",
            json!({"a": "1", "b": ""}),
            strings(&[("a", "1"), ("b", "")]),
        ),
        (
            "values of other types left out",
            json!({"a": "1", "n": 2, "o": {"x": "y"}, "l": ["z"], "t": true, "z": null}),
            strings(&[("a", "1")]),
        ),
        ("empty", json!({}), strings(&[])),
        ("null", Value::Null, strings(&[])),
        ("a string", json!("a=1"), strings(&[])),
        ("a list", json!([{"a": "1"}]), strings(&[])),
        ("a number", json!(7), strings(&[])),
    ];
    for (what, value, want) in cases {
        let read = metadata(json!({"labels": value.clone(), "annotations": value}));
        assert_eq!(read.labels, want, "labels: {what}");
        assert_eq!(read.annotations, want, "annotations: {what}");
    }
}

#[test]
fn a_repeated_key_counts_as_its_last_value() {
    let text = r#"{"labels": {"a": "first", "a": "second", "b": "kept", "b": 3}}"#;
    let read: ObjectMetadata = serde_json::from_str(text).expect("decodes");
    assert_eq!(read.labels, strings(&[("a", "second")]));
}

#[test]
fn finalizers_tell_absent_from_a_list_from_anything_else() {
    let list = |names: &[&str]| Finalizers::List(names.iter().map(|n| n.to_string()).collect());
    let cases: Vec<(&str, Option<Value>, Finalizers)> = vec![
        ("absent", None, Finalizers::Absent),
        ("null", Some(Value::Null), Finalizers::Absent),
        ("empty list", Some(json!([])), list(&[])),
        ("names", Some(json!(["a/b", "c/d"])), list(&["a/b", "c/d"])),
        (
            "entries that are not strings left out",
            Some(json!(["a/b", 1, {"x": "y"}, null, ["c"], "e/f"])),
            list(&["a/b", "e/f"]),
        ),
        ("a string", Some(json!("a/b")), Finalizers::NotAList),
        ("an object", Some(json!({"a": "b"})), Finalizers::NotAList),
        ("a number", Some(json!(3)), Finalizers::NotAList),
        ("a boolean", Some(json!(false)), Finalizers::NotAList),
    ];
    for (what, value, want) in cases {
        let fields = match value {
            Some(value) => json!({"finalizers": value}),
            None => json!({}),
        };
        assert_eq!(metadata(fields).finalizers, want, "{what}");
    }
}

#[test]
fn owner_references_keep_kind_and_api_version() {
    let owner = |api: Option<&str>, kind: Option<&str>| OwnerReference {
        api_version: api.map(str::to_owned),
        kind: kind.map(str::to_owned),
    };
    let cases: Vec<(&str, Value, Vec<OwnerReference>)> = vec![
        (
            "a Workspace owner",
            json!([{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "a",
                    "uid": "u", "controller": true, "blockOwnerDeletion": true}]),
            vec![owner(Some("lifeguard.dev/v1alpha1"), Some("Workspace"))],
        ),
        (
            "fields of other types read as absent",
            json!([{"apiVersion": 2, "kind": ["Workspace"]}]),
            vec![owner(None, None)],
        ),
        (
            "entries that are not objects read as owners with no fields",
            json!(["Workspace", 1, null, {"kind": "ReplicaSet", "apiVersion": "apps/v1"}]),
            vec![
                owner(None, None),
                owner(None, None),
                owner(None, None),
                owner(Some("apps/v1"), Some("ReplicaSet")),
            ],
        ),
        ("not a list", json!({"kind": "Workspace"}), vec![]),
        ("a string", json!("Workspace"), vec![]),
        ("null", Value::Null, vec![]),
    ];
    for (what, value, want) in cases {
        assert_eq!(
            metadata(json!({"ownerReferences": value})).owner_references,
            want,
            "{what}"
        );
    }
}

#[test]
fn a_deletion_timestamp_that_is_set_means_deleting() {
    let cases = [
        (json!({}), false),
        (json!({"deletionTimestamp": null}), false),
        (json!({"deletionTimestamp": "2026-11-23T20:00:00Z"}), true),
        // Anything but null counts, as the API server would never send it otherwise.
        (json!({"deletionTimestamp": 0}), true),
        (json!({"deletionTimestamp": {}}), true),
    ];
    for (fields, want) in cases {
        assert_eq!(metadata(fields.clone()).deleting, want, "{fields}");
    }
}

#[test]
fn the_name_is_read_when_it_is_a_string() {
    assert_eq!(
        metadata(json!({"name": "alice"})).name.as_deref(),
        Some("alice")
    );
    assert_eq!(metadata(json!({"name": 5})).name, None);
    assert_eq!(metadata(json!({"name": null})).name, None);
}

#[test]
fn fields_no_decision_reads_are_skipped_whatever_they_hold() {
    let read = metadata(json!({
        "name": "a", "namespace": "n", "uid": "u", "resourceVersion": "1",
        "managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}],
        "generateName": 3, "creationTimestamp": null,
    }));
    assert_eq!(
        read,
        ObjectMetadata {
            name: Some("a".into()),
            ..ObjectMetadata::default()
        }
    );
}

#[test]
fn the_validation_view_holds_the_name_the_annotations_and_the_spec() {
    let object = AdmittedObject {
        metadata: ObjectMetadata {
            name: Some("a".into()),
            labels: strings(&[("team", "blue")]),
            annotations: strings(&[("lifeguard.dev/postpone-drain", "30m")]),
            ..ObjectMetadata::default()
        },
        spec: Some(json!({"podTemplate": {}})),
        affinity: None,
    };
    assert_eq!(
        object.validation_view(),
        json!({"metadata": {"name": "a", "annotations": {"lifeguard.dev/postpone-drain": "30m"}},
               "spec": {"podTemplate": {}}})
    );
    assert_eq!(
        AdmittedObject::default().validation_view(),
        json!({"metadata": {}})
    );
}
