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
//! reconcile (two reads) per start. The reconciler says so before it sends the create
//! (`creating`), since the watch event often comes before the create's answer, and then
//! gives the resource version the create returned (`created`) or withdraws (`not_created`).
//! The pod's first event after that settles it: it is dropped only if it came while the
//! create was in flight (nothing but the create can have made it then: a pod of that name
//! that already existed makes the create fail, and the reconcile then reads it) or at
//! exactly the version the create returned. Any later change of the pod triggers.

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

/// What the reconciler's creates lead the watch to expect, by pod.
#[derive(Debug, Default)]
struct Echoes(HashMap<PodKey, Option<String>>);

impl Echoes {
    /// A create of this pod is about to be sent.
    fn creating(&mut self, key: PodKey) {
        self.0.insert(key, None);
    }

    /// The create returned the pod at `version`; unless its echo came already.
    fn created(&mut self, key: &PodKey, version: String) {
        if let Some(expected) = self.0.get_mut(key) {
            *expected = Some(version);
        }
    }

    /// The create failed: no echo comes.
    fn not_created(&mut self, key: &PodKey) {
        self.0.remove(key);
    }

    /// Whether an event of pod `key` at `version` is the echo; any event settles the pod.
    fn take(&mut self, key: &PodKey, version: Option<&str>) -> bool {
        match self.0.remove(key) {
            None => false,
            // While the create was in flight.
            Some(None) => true,
            Some(Some(expected)) => version == Some(expected.as_str()),
        }
    }
}

#[derive(Clone)]
pub struct PodNames {
    store: Store<PartialObjectMeta<Pod>>,
    /// Whether the first list is in: before, a pod missing from the cache may exist.
    ready: Arc<AtomicBool>,
    /// The creates whose echo is awaited; an entry lives from just before the create to
    /// the pod's next event (or the create's failure).
    echoes: Arc<Mutex<Echoes>>,
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

    /// The Workspace owning the workspace pod `name`, if the cache holds the pod.
    pub fn owner(&self, namespace: &str, name: &str) -> Option<crate::nodes::WorkspaceRef> {
        let pod = self.store.get(&ObjectRef::new(name).within(namespace))?;
        pod.metadata
            .owner_references
            .iter()
            .flatten()
            .find_map(|r| ObjectRef::from_owner_ref(Some(namespace), r, ()))
    }

    fn echoes(&self) -> Option<std::sync::MutexGuard<'_, Echoes>> {
        self.echoes.lock().ok()
    }

    /// The reconciler is about to create `pod` (named, in its namespace), and will plan
    /// with what the create returns.
    pub fn creating(&self, pod: &Pod) {
        if let (Some(key), Some(mut echoes)) = (key_of(pod), self.echoes()) {
            echoes.creating(key);
        }
    }

    /// The create of `created` succeeded.
    pub fn created(&self, created: &Pod) {
        let (Some(key), Some(version)) =
            (key_of(created), created.metadata.resource_version.clone())
        else {
            return;
        };
        if let Some(mut echoes) = self.echoes() {
            echoes.created(&key, version);
        }
    }

    /// The create of `pod` failed.
    pub fn not_created(&self, pod: &Pod) {
        if let (Some(key), Some(mut echoes)) = (key_of(pod), self.echoes()) {
            echoes.not_created(&key);
        }
    }

    /// Whether this event of `pod` is the echo of the reconciler's own create.
    fn is_echo(&self, pod: &PartialObjectMeta<Pod>) -> bool {
        let (Some(key), Some(mut echoes)) = (key_of(pod), self.echoes()) else {
            return false;
        };
        echoes.take(&key, pod.metadata.resource_version.as_deref())
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

    fn key(name: &str) -> PodKey {
        ("team-a".to_string(), name.to_string())
    }

    #[test]
    fn only_the_echo_of_our_own_create_is_dropped_and_only_once() {
        let mut echoes = Echoes::default();
        // alice: answered before her echo came; bob: his echo came first; carol: refused.
        echoes.creating(key("ws-alice"));
        echoes.creating(key("ws-bob"));
        echoes.creating(key("ws-carol"));
        echoes.created(&key("ws-alice"), "10".into());
        let events = [
            ("a pod nobody created", key("ws-dave"), "5", false),
            (
                "bob's echo, while his create was in flight",
                key("ws-bob"),
                "20",
                true,
            ),
            (
                "alice's echo, at the version her create returned",
                key("ws-alice"),
                "10",
                true,
            ),
            (
                "alice again at that version (a relist)",
                key("ws-alice"),
                "10",
                false,
            ),
            ("alice bound", key("ws-alice"), "11", false),
            ("bob bound", key("ws-bob"), "21", false),
        ];
        for (what, pod, version, echo) in events {
            assert_eq!(echoes.take(&pod, Some(version)), echo, "{what}");
        }
        // bob's answer after his echo: nothing is awaited any more.
        echoes.created(&key("ws-bob"), "20".into());
        echoes.not_created(&key("ws-carol"));
        assert!(echoes.0.is_empty(), "every expectation is settled");
        // A pod changed since the create returned: that change triggers.
        echoes.creating(key("ws-erin"));
        echoes.created(&key("ws-erin"), "30".into());
        assert!(
            !echoes.take(&key("ws-erin"), Some("31")),
            "erin changed since"
        );
    }
}
