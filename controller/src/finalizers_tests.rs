use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::*;

fn answer(meta: serde_json::Value) -> Pod {
    let mut metadata = json!({"name": "ws-alice-pod", "namespace": "team-a", "uid": "p1", "resourceVersion": "42"});
    if let (Some(into), Some(from)) = (metadata.as_object_mut(), meta.as_object()) {
        into.extend(from.clone());
    }
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata}))
        .unwrap_or_default()
}

#[test]
fn a_write_that_removed_the_pod_is_told_from_one_that_stored_it() {
    let deleting = "2026-11-28T10:00:00Z";
    let cases = [
        ("a pod not being deleted", json!({}), false),
        (
            "a graceful delete: the kubelet stops the containers first",
            json!({"deletionTimestamp": deleting, "deletionGracePeriodSeconds": 30}),
            false,
        ),
        (
            "no grace, but a finalizer holds it",
            json!({"deletionTimestamp": deleting, "deletionGracePeriodSeconds": 0,
                   "finalizers": ["lifeguard.dev/disposal"]}),
            false,
        ),
        (
            "no grace and no finalizer: removed by that write",
            json!({"deletionTimestamp": deleting, "deletionGracePeriodSeconds": 0}),
            true,
        ),
        (
            "no grace and an emptied finalizer list (a release's patch)",
            json!({"deletionTimestamp": deleting, "deletionGracePeriodSeconds": 0,
                   "finalizers": []}),
            true,
        ),
    ];
    for (what, meta, gone) in cases {
        let pod = answer(meta);
        assert_eq!(
            pod.metadata.resource_version.as_deref(),
            Some("42"),
            "{what}"
        );
        let left = PodLeft::of(pod.clone());
        let removed = PodLeft::Gone {
            uid: Some("p1".into()),
        };
        assert_eq!(left == removed, gone, "{what}");
        assert_eq!(
            PodLeft::of_delete(Either::Left(pod), None),
            left,
            "{what}: a delete's answer reads the same"
        );
    }
    assert_eq!(
        PodLeft::of_delete(Either::Right(Status::default()), Some("p1".into())),
        PodLeft::Gone {
            uid: Some("p1".into())
        },
        "a delete answered with a Status removed the object it was sent for"
    );
}

#[test]
fn a_refused_delete_says_whether_the_pod_is_gone() {
    let gone = Some(PodLeft::Gone {
        uid: Some("p1".into()),
    });
    let cases = [
        (
            "not found: no pod of that name, so this one was removed already",
            404,
            Some(Deletion::AlreadyGone),
            gone.clone(),
        ),
        (
            "conflict on the UID: another pod has the name, this one's fate is unknown",
            409,
            Some(Deletion::Replaced),
            None,
        ),
        ("forbidden: an error, not an answer", 403, None, None),
        ("the server failed: an error", 500, None, None),
    ];
    for (what, code, want, left) in cases {
        let deletion = Deletion::of_refusal(code);
        assert_eq!(deletion, want, "{what}");
        assert_eq!(
            deletion.and_then(|d| d.left(Some("p1".into()))),
            left,
            "{what}: what is left"
        );
    }
    let stored = answer(json!({}));
    assert_eq!(
        Deletion::Deleted(PodLeft::Stored(Box::new(stored.clone()))).left(Some("p1".into())),
        Some(PodLeft::Stored(Box::new(stored))),
        "a delete that wrote leaves what it wrote"
    );
}
