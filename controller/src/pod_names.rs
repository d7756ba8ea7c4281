//! The workspace reconciler's watch of workspace pods (label `lifeguard.dev/workspace`,
//! metadata only): it triggers each pod's owning Workspace, as `Controller::owns` would,
//! and keeps which pod names exist, so that a new Workspace's first reconcile need not read
//! a pod that cannot exist yet (`workspace::pod_read`).
//!
//! Only the name, the namespace, the resource version and the owner references to
//! Workspaces are kept: the owners are what the trigger maps from (it runs after the cache
//! took its copy), and a few hundred bytes a pod are what the 10,000-workspace memory
//! target allows.
//!
//! The first event of a pod the reconciler has just created is its own echo: the
//! reconcile that created it already planned with the pod the create returned
//! (`reconcile`, `Pass::Created`). That event is dropped here instead of costing a
//! reconcile (two reads) per start. The reconciler says which resource version to expect
//! (`expect_echo`); any event of that pod settles the expectation, and only one at exactly
//! that version is dropped, so an event that raced ahead of the expectation, or anything
//! that changed the pod since, still triggers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::{Stream, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use lifeguard_api::Workspace;
use lifeguard_api::names::WORKSPACE_LABEL;

use crate::workspace::pod_read::CachedPod;

/// (namespace, name) of a pod.
type PodKey = (String, String);

#[derive(Clone)]
pub struct PodNames {
    store: Store<PartialObjectMeta<Pod>>,
    /// Whether the first list is in: before, a pod missing from the cache may exist.
    ready: Arc<AtomicBool>,
    /// Pods just created by the reconciler, with the resource version the create returned;
    /// an entry lives from the create to the pod's next event.
    echoes: Arc<Mutex<HashMap<PodKey, String>>>,
}

fn key_of(pod: &impl Resource) -> Option<PodKey> {
    Some((pod.meta().namespace.clone()?, pod.meta().name.clone()?))
}

impl PodNames {
    /// What the cache says about pod `name` in `namespace`.
    pub fn lookup(&self, namespace: &str, name: &str) -> CachedPod {
        if !self.ready.load(Ordering::Acquire) {
            return CachedPod::Unknown;
        }
        match self.store.get(&ObjectRef::new(name).within(namespace)) {
            Some(_) => CachedPod::Present,
            None => CachedPod::Absent,
        }
    }

    /// The reconciler created `pod` and planned with it: its watch event at this resource
    /// version brings nothing new.
    pub fn expect_echo(&self, pod: &Pod) {
        let (Some(key), Some(version)) = (key_of(pod), pod.metadata.resource_version.clone())
        else {
            return;
        };
        if let Ok(mut echoes) = self.echoes.lock() {
            echoes.insert(key, version);
        }
    }

    /// Whether this event of `pod` is the echo of the reconciler's own create; any event
    /// of the pod ends the wait for its echo.
    fn is_echo(&self, pod: &PartialObjectMeta<Pod>) -> bool {
        let Some(key) = key_of(pod) else {
            return false;
        };
        let Ok(mut echoes) = self.echoes.lock() else {
            return false;
        };
        echoes.remove(&key).is_some_and(|expected| {
            pod.metadata.resource_version.as_deref() == Some(expected.as_str())
        })
    }
}

/// Keeps the name, the namespace, the resource version (for `is_echo`) and the owner
/// references to Workspaces (without their `controller` and `blockOwnerDeletion`, which
/// the trigger does not read).
fn strip(pod: &mut PartialObjectMeta<Pod>) {
    let meta = std::mem::take(&mut pod.metadata);
    pod.types = None;
    pod.metadata.name = meta.name;
    pod.metadata.namespace = meta.namespace;
    pod.metadata.resource_version = meta.resource_version;
    let workspace_kind = Workspace::kind(&());
    let owners: Vec<OwnerReference> = meta
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.kind == workspace_kind)
        .map(|r| OwnerReference {
            api_version: r.api_version,
            kind: r.kind,
            name: r.name,
            uid: r.uid,
            ..Default::default()
        })
        .collect();
    pod.metadata.owner_references = (!owners.is_empty()).then_some(owners);
}

/// Starts watching workspace pods. Returns the cache and the stream of pods seen (each
/// change and deletion), for `Controller::owns_stream`; the cache fills as the controller
/// polls that stream.
pub fn watch(
    client: Client,
) -> (
    PodNames,
    impl Stream<Item = Result<PartialObjectMeta<Pod>, watcher::Error>> + Send + 'static,
) {
    let (store, writer) = reflector::store();
    let ready = Arc::new(AtomicBool::new(false));
    {
        let (store, ready) = (store.clone(), ready.clone());
        tokio::spawn(async move {
            if store.wait_until_ready().await.is_ok() {
                ready.store(true, Ordering::Release);
            }
        });
    }
    let names = PodNames {
        store,
        ready,
        echoes: Arc::default(),
    };
    let filter = names.clone();
    let events = watcher(
        Api::<PartialObjectMeta<Pod>>::all(client),
        watcher::Config::default().labels(WORKSPACE_LABEL),
    )
    .default_backoff()
    .modify(strip)
    .reflect(writer)
    .touched_objects()
    // After the cache took it: an echo still records that the pod exists.
    .try_filter(move |pod| std::future::ready(!filter.is_echo(pod)));
    (names, events)
}

#[cfg(test)]
mod tests {
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
            json!({"name": "ws-alice", "namespace": "team-a", "resourceVersion": "42", "ownerReferences": [
                {"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "alice",
                 "uid": "w1"}]})
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

    fn seen(name: &str, version: &str) -> PartialObjectMeta<Pod> {
        serde_json::from_value(json!({"metadata": {
            "name": name, "namespace": "team-a", "resourceVersion": version}}))
        .expect("pod literal")
    }

    fn created(name: &str, version: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {
            "name": name, "namespace": "team-a", "resourceVersion": version}}))
        .expect("pod literal")
    }

    #[test]
    fn only_the_echo_of_our_own_create_is_dropped_and_only_once() {
        let (store, _writer) = reflector::store();
        let names = PodNames {
            store,
            ready: Arc::default(),
            echoes: Arc::default(),
        };
        names.expect_echo(&created("ws-alice", "10"));
        names.expect_echo(&created("ws-bob", "20"));
        let events = [
            ("a pod nobody expects", seen("ws-carol", "5"), false),
            ("alice's echo", seen("ws-alice", "10"), true),
            (
                "alice again at that version (a relist)",
                seen("ws-alice", "10"),
                false,
            ),
            ("alice bound", seen("ws-alice", "11"), false),
            // Changed before its echo came (or the expectation came after the echo).
            ("bob past his create", seen("ws-bob", "21"), false),
            (
                "bob's create version, too late",
                seen("ws-bob", "20"),
                false,
            ),
        ];
        for (what, event, echo) in events {
            assert_eq!(names.is_echo(&event), echo, "{what}");
        }
        assert!(
            names.echoes.lock().expect("not poisoned").is_empty(),
            "every expectation is settled by the pod's next event"
        );
    }
}
