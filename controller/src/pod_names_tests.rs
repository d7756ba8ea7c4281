use serde_json::json;

use super::*;

#[test]
fn strip_keeps_what_the_trigger_and_the_lookup_read() {
    let mut pod: PartialObjectMeta<Pod> = serde_json::from_value(json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {
            "name": "ws-alice", "namespace": "team-a", "uid": "p1",
            "resourceVersion": "42", "labels": {"lifeguard.dev/workspace": "alice"},
            "finalizers": ["lifeguard.dev/disposal"],
            "managedFields": [{"manager": "lifeguard-controller", "operation": "Update"}],
            "ownerReferences": [
                {"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "alice",
                 "uid": "w1", "controller": true, "blockOwnerDeletion": true},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "c1"}
            ]
        }
    }))
    .expect("pod literal");
    strip(&mut pod);
    assert_eq!(
        serde_json::to_value(&pod.metadata).expect("serializes"),
        json!({"name": "ws-alice", "namespace": "team-a", "uid": "p1", "resourceVersion": "42", "ownerReferences": [
            {"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "alice",
             "uid": "w1", "controller": true}]}),
        "a running pod keeps no finalizer: only stopping ones are the sweep's"
    );
    let owners: Vec<_> = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter_map(|r| {
            ObjectRef::<PartialObjectMeta<Workspace>>::from_owner_ref(Some("team-a"), r, ())
        })
        .collect();
    assert_eq!(
        owners,
        vec![ObjectRef::new("alice").within("team-a")],
        "the owning Workspace is still found"
    );
}

#[test]
fn strip_keeps_what_the_sweep_reads_of_a_stopping_pod() {
    let mut pod: PartialObjectMeta<Pod> = serde_json::from_value(json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {
            "name": "ws-alice", "namespace": "team-a", "resourceVersion": "43",
            "deletionTimestamp": "2026-12-01T12:00:00Z",
            "finalizers": ["example.com/keep", "lifeguard.dev/disposal"],
            "annotations": {"lifeguard.dev/disposal-confirmation": "required",
                            "kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "ownerReferences": [
                {"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "alice",
                 "uid": "w1", "controller": true}
            ]
        }
    }))
    .expect("pod literal");
    let before = StoppingPod::of(&pod.metadata);
    strip(&mut pod);
    assert!(before.is_some());
    assert_eq!(
        StoppingPod::of(&pod.metadata),
        before,
        "the sweep reads the same from the stripped pod"
    );
    assert_eq!(
        pod.metadata
            .annotations
            .map(|a| a.into_keys().collect::<Vec<_>>()),
        Some(vec!["lifeguard.dev/disposal-confirmation".to_string()]),
        "only the disposal annotations are kept"
    );
}

fn pod(namespace: &str, name: &str, owner: Option<&str>) -> PartialObjectMeta<Pod> {
    let owners: Vec<_> = owner
        .map(|o| json!({"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": o, "uid": "w"}))
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": owners}
    }))
    .expect("pod literal")
}

#[test]
fn the_index_knows_nothing_until_its_first_list_completes() {
    use watcher::Event::*;
    let mut index = PodIndex::default();
    assert_eq!(index.lookup("team-a", "ws-alice"), CachedPod::Unknown);
    index.apply(&Init);
    index.apply(&InitApply(pod("team-a", "ws-alice", Some("alice"))));
    assert_eq!(
        index.lookup("team-b", "ws-bob"),
        CachedPod::Unknown,
        "a list in progress proves no absence"
    );
    index.apply(&InitDone);
    assert_eq!(index.lookup("team-a", "ws-alice"), CachedPod::Present);
    assert_eq!(index.lookup("team-a", "ws-bob"), CachedPod::Absent);
    assert_eq!(index.lookup("team-b", "ws-alice"), CachedPod::Absent);
}

#[test]
fn the_index_follows_changes_and_a_relist_replaces_it() {
    use watcher::Event::*;
    let mut index = PodIndex::default();
    for event in [
        Init,
        InitApply(pod("team-a", "ws-alice", Some("alice"))),
        InitApply(pod("team-a", "ws-bob", Some("bob"))),
        InitDone,
        Apply(pod("team-b", "ws-carol", Some("carol"))),
        Delete(pod("team-a", "ws-bob", Some("bob"))),
    ] {
        index.apply(&event);
    }
    let present =
        |index: &PodIndex, ns: &str, name: &str| index.lookup(ns, name) == CachedPod::Present;
    assert!(present(&index, "team-a", "ws-alice"));
    assert!(!present(&index, "team-a", "ws-bob"), "deleted");
    assert!(
        present(&index, "team-b", "ws-carol"),
        "created after the list"
    );
    // The watch restarts; while it relists, the old index still answers.
    index.apply(&Init);
    index.apply(&InitApply(pod("team-b", "ws-carol", Some("carol"))));
    assert!(
        present(&index, "team-a", "ws-alice"),
        "until the relist completes"
    );
    index.apply(&InitDone);
    assert!(
        !present(&index, "team-a", "ws-alice"),
        "deleted while the watch was down: the relist drops it"
    );
    assert!(present(&index, "team-b", "ws-carol"));
    // The last pod of a namespace leaves no empty map behind.
    index.apply(&Delete(pod("team-b", "ws-carol", Some("carol"))));
    assert!(index.current.pods.is_empty());
}

fn stopping(namespace: &str, name: &str) -> PartialObjectMeta<Pod> {
    let mut pod = pod(namespace, name, Some("alice"));
    pod.metadata.finalizers = Some(vec!["lifeguard.dev/disposal".to_string()]);
    pod.metadata.deletion_timestamp = serde_json::from_value(json!("2026-12-01T12:00:00Z")).ok();
    pod
}

fn stopping_names(index: &PodIndex) -> Option<Vec<String>> {
    let mut names: Vec<String> = index
        .stopping()?
        .into_iter()
        .map(|((namespace, name), _)| format!("{namespace}/{name}"))
        .collect();
    names.sort();
    Some(names)
}

#[test]
fn the_index_keeps_the_stopping_pods_until_they_are_gone() {
    use watcher::Event::*;
    let mut index = PodIndex::default();
    index.apply(&Init);
    index.apply(&InitApply(stopping("team-a", "ws-left")));
    index.apply(&InitApply(pod("team-a", "ws-alice", Some("alice"))));
    assert_eq!(
        stopping_names(&index),
        None,
        "unknown before the first list"
    );
    index.apply(&InitDone);
    assert_eq!(
        stopping_names(&index),
        Some(vec!["team-a/ws-left".to_string()])
    );
    index.apply(&Apply(stopping("team-a", "ws-alice")));
    index.apply(&Apply(stopping("team-b", "ws-bob")));
    index.apply(&Delete(stopping("team-a", "ws-left")));
    assert_eq!(
        stopping_names(&index),
        Some(vec![
            "team-a/ws-alice".to_string(),
            "team-b/ws-bob".to_string()
        ])
    );
    // Our finalizer released (the pod is still deleting, waiting for another one).
    let mut released = stopping("team-b", "ws-bob");
    released.metadata.finalizers = Some(vec!["example.com/keep".to_string()]);
    index.apply(&Apply(released));
    assert_eq!(
        stopping_names(&index),
        Some(vec!["team-a/ws-alice".to_string()])
    );
    // A relist replaces them as it replaces the names: one deleted while the watch was down
    // is dropped.
    index.apply(&Init);
    index.apply(&InitApply(pod("team-c", "ws-carol", Some("carol"))));
    index.apply(&InitDone);
    assert_eq!(stopping_names(&index), Some(vec![]));
}

#[test]
fn the_owner_is_the_workspace_of_the_owner_reference() {
    use watcher::Event::*;
    let mut index = PodIndex::default();
    let cases = [
        (
            "a pod the controller created",
            "ws-alice",
            Some("alice"),
            Some("alice"),
        ),
        (
            "a pod named for another Workspace",
            "ws-bob",
            Some("carol"),
            Some("carol"),
        ),
        ("a labelled pod no Workspace owns", "ws-dave", None, None),
        (
            "a pod whose name follows no rule",
            "tool",
            Some("erin"),
            Some("erin"),
        ),
    ];
    index.apply(&Init);
    for (_, name, owner, _) in cases {
        index.apply(&InitApply(pod("team-a", name, owner)));
    }
    index.apply(&InitDone);
    for (what, name, _, expected) in cases {
        assert_eq!(index.owner("team-a", name), expected, "{what}");
    }
    assert_eq!(
        index.get("team-a", "ws-alice"),
        Some(&Owner::NamedByPod),
        "no copy of a name the pod's name already gives"
    );
    assert_eq!(index.owner("team-b", "ws-alice"), None, "another namespace");
}

/// A pod as the watch yields it, stripped: `finalizers` and whether it carries an
/// eviction notice.
fn evicted(name: &str, finalizers: &[&str], deleting: bool) -> PartialObjectMeta<Pod> {
    let mut pod: PartialObjectMeta<Pod> = serde_json::from_value(json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {
            "name": name, "namespace": "team-a", "finalizers": finalizers,
            "annotations": {"lifeguard.dev/eviction-notice": "{}", "other": "x"},
        }
    }))
    .expect("pod literal");
    if deleting {
        pod.metadata.deletion_timestamp =
            serde_json::from_value(json!("2026-12-01T12:00:00Z")).ok();
    }
    strip(&mut pod);
    pod
}

#[test]
fn the_index_counts_the_evicted_pods_told_of_their_stop_until_lifeguard_lets_go() {
    use watcher::Event::*;
    let names = |index: &PodIndex| {
        index.evicting().map(|mut keys| {
            keys.sort();
            keys.into_iter().map(|(_, n)| n).collect::<Vec<_>>()
        })
    };
    let mut index = PodIndex::default();
    index.apply(&Init);
    index.apply(&InitApply(evicted(
        "ws-a",
        &["lifeguard.dev/disposal"],
        false,
    )));
    assert_eq!(names(&index), None, "unknown before the first list");
    index.apply(&InitDone);
    assert_eq!(
        names(&index),
        Some(vec!["ws-a".to_string()]),
        "told, waiting out its notice"
    );
    index.apply(&Apply(evicted("ws-b", &["lifeguard.dev/disposal"], true)));
    index.apply(&Apply(pod("team-a", "ws-c", Some("c"))));
    assert_eq!(
        names(&index),
        Some(vec!["ws-a".to_string(), "ws-b".to_string()]),
        "told and being saved; a pod without a notice is not evicted"
    );
    index.apply(&Apply(evicted("ws-b", &["example.com/keep"], true)));
    index.apply(&Delete(evicted("ws-a", &["lifeguard.dev/disposal"], true)));
    assert_eq!(names(&index), Some(vec![]), "released, and gone");
}

#[test]
fn strip_keeps_the_eviction_notice_only_while_lifeguard_holds_the_pod() {
    let kept = |p: PartialObjectMeta<Pod>| {
        p.metadata
            .annotations
            .map(|a| a.into_keys().collect::<Vec<_>>())
    };
    assert_eq!(
        kept(evicted("ws-a", &["lifeguard.dev/disposal"], false)),
        Some(vec!["lifeguard.dev/eviction-notice".to_string()])
    );
    assert_eq!(kept(evicted("ws-a", &[], true)), None);
}
