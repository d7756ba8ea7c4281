//! The workspace reconciler's watch of workspace pods (label `lifeguard.dev/workspace`,
//! metadata only): it triggers each pod's owning Workspace, as `Controller::owns` would,
//! and keeps which pod names exist, so that a new Workspace's first reconcile need not read
//! a pod that cannot exist yet (`workspace::pod_read`).
//!
//! Only the name, the namespace and the owner references to Workspaces are kept: the
//! owners are what the trigger maps from (it runs after the cache took its copy), and a
//! few hundred bytes a pod are what the 10,000-workspace memory target allows.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::Stream;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use lifeguard_api::Workspace;
use lifeguard_api::names::WORKSPACE_LABEL;

use crate::workspace::pod_read::CachedPod;

#[derive(Clone)]
pub struct PodNames {
    store: Store<PartialObjectMeta<Pod>>,
    /// Whether the first list is in: before, a pod missing from the cache may exist.
    ready: Arc<AtomicBool>,
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
}

/// Keeps the name, the namespace and the owner references to Workspaces (without their
/// `controller` and `blockOwnerDeletion`, which the trigger does not read).
fn strip(pod: &mut PartialObjectMeta<Pod>) {
    let meta = std::mem::take(&mut pod.metadata);
    pod.types = None;
    pod.metadata.name = meta.name;
    pod.metadata.namespace = meta.namespace;
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
    let events = watcher(
        Api::<PartialObjectMeta<Pod>>::all(client),
        watcher::Config::default().labels(WORKSPACE_LABEL),
    )
    .default_backoff()
    .modify(strip)
    .reflect(writer)
    .touched_objects();
    (PodNames { store, ready }, events)
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
            json!({"name": "ws-alice", "namespace": "team-a", "ownerReferences": [
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
}
