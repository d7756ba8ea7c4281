//! The workspace reconciler's watch of workspace pods (label `lifeguard.dev/workspace`,
//! metadata only): it triggers each pod's owning Workspace, as `Controller::owns` would,
//! and keeps which pod names exist, so that a new Workspace's first reconcile need not read
//! a pod that cannot exist yet (`workspace::pod_read`).
//!
//! The cache is an index of (namespace, name) to the owning Workspace, a few dozen bytes a
//! pod plus its name: that, not a reflector store of pod metadata (about 1 KB a pod even
//! stripped), is what the 10,000-workspace memory target allows. The pods the stream
//! yields keep only the name, the namespace, the UID, the resource version and the owner
//! references to Workspaces, which the controller's trigger maps from.
//!
//! The events of a pod that its reconciler already knows of (a state it read, its own
//! create, delete or release) are dropped here instead of costing a reconcile (two reads)
//! each: the reconcile already planned with that state. Which events those are is
//! `pod_echoes`'s rule; the reconciler says when it starts (`reconciling`), what it read
//! and wrote (`known`) and when it is done (`settle`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::{Stream, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use lifeguard_api::Workspace;
use lifeguard_api::names::{
    DISPOSAL_CONFIRMATION_ANNOTATION, DISPOSAL_RESULT_ANNOTATION, EVICTION_NOTICE_ANNOTATION,
    POD_FINALIZER, WORKSPACE_LABEL, workspace_of_pod,
};

use crate::pod_echoes::{Echoes, Known, Seen, Settled};
use crate::stopping::StoppingPod;
use crate::workspace::plan::has_finalizer;
use crate::workspace::pod_read::CachedPod;

pub use crate::pod_echoes::PodKey;

/// Which Workspace owns a workspace pod, as its owner reference says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    /// The Workspace the pod's name is made from (`names::pod_name`): every pod the
    /// controller creates, kept without a copy of the name.
    NamedByPod,
    Other(Box<str>),
    /// No Workspace owns it (a pod with the label that lifeguard did not create).
    None,
}

/// A namespace's workspace pods, by name.
type PodsByName = HashMap<Box<str>, Owner>;

/// What one list (and the watch events after it) says: the workspace pods by namespace and
/// name with their owners, a few dozen bytes a pod plus its name, where a reflector store
/// of the stripped metadata held a whole `ObjectMeta`, its key and its owner reference
/// (about 1 KB a pod); and the few stopping ones, for the sweep.
#[derive(Debug, Default)]
struct Listing {
    pods: HashMap<Box<str>, PodsByName>,
    stopping: HashMap<(Box<str>, Box<str>), StoppingPod>,
    /// The evicted pods told of their stop and still held by lifeguard's finalizer
    /// (`workspace::eviction::in_flight`), for the cluster's eviction budget.
    evicting: HashSet<PodKey>,
}

#[derive(Debug, Default)]
struct PodIndex {
    current: Listing,
    /// The pods of a relist in progress, which replace `current` when it completes (as a
    /// reflector's store does): a pod deleted while the watch was down is dropped then.
    relisting: Option<Listing>,
    /// Whether a first list completed: before, a pod missing from the index may exist.
    listed: bool,
}

fn owner_of(meta: &ObjectMeta, name: &str) -> Owner {
    let workspace_kind = Workspace::kind(&());
    match meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.kind == workspace_kind)
    {
        Some(r) if workspace_of_pod(name) == Some(r.name.as_str()) => Owner::NamedByPod,
        Some(r) => Owner::Other(r.name.as_str().into()),
        None => Owner::None,
    }
}

impl Listing {
    fn insert(&mut self, pod: &PartialObjectMeta<Pod>) {
        let (Some(namespace), Some(name)) = (&pod.metadata.namespace, &pod.metadata.name) else {
            return;
        };
        let owner = owner_of(&pod.metadata, name);
        // Look the namespace up first: `entry` would allocate its key for every event, and
        // a namespace's map exists for all but its first pod.
        match self.pods.get_mut(namespace.as_str()) {
            Some(in_namespace) => in_namespace.insert(name.as_str().into(), owner),
            None => self
                .pods
                .entry(namespace.as_str().into())
                .or_default()
                .insert(name.as_str().into(), owner),
        };
        let noticed = pod
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(EVICTION_NOTICE_ANNOTATION));
        if noticed {
            self.evicting.insert((namespace.clone(), name.clone()));
        } else if !self.evicting.is_empty() {
            self.evicting.remove(&(namespace.clone(), name.clone()));
        }
        let key = (namespace.as_str().into(), name.as_str().into());
        match StoppingPod::of(&pod.metadata) {
            Some(stopping) => {
                self.stopping.insert(key, stopping);
            }
            None => {
                self.stopping.remove(&key);
            }
        }
    }

    fn remove(&mut self, pod: &PartialObjectMeta<Pod>) {
        let (Some(namespace), Some(name)) = (&pod.metadata.namespace, &pod.metadata.name) else {
            return;
        };
        if let Some(in_namespace) = self.pods.get_mut(namespace.as_str()) {
            in_namespace.remove(name.as_str());
            if in_namespace.is_empty() {
                self.pods.remove(namespace.as_str());
            }
        }
        if !self.stopping.is_empty() {
            self.stopping
                .remove(&(namespace.as_str().into(), name.as_str().into()));
        }
        if !self.evicting.is_empty() {
            self.evicting.remove(&(namespace.clone(), name.clone()));
        }
    }
}

impl PodIndex {
    fn apply(&mut self, event: &watcher::Event<PartialObjectMeta<Pod>>) {
        match event {
            watcher::Event::Apply(pod) => self.current.insert(pod),
            watcher::Event::Delete(pod) => self.current.remove(pod),
            watcher::Event::Init => self.relisting = Some(Listing::default()),
            watcher::Event::InitApply(pod) => {
                if let Some(relisting) = self.relisting.as_mut() {
                    relisting.insert(pod);
                }
            }
            watcher::Event::InitDone => {
                if let Some(listed) = self.relisting.take() {
                    self.current = listed;
                    self.listed = true;
                }
            }
        }
    }

    fn get(&self, namespace: &str, name: &str) -> Option<&Owner> {
        self.current.pods.get(namespace)?.get(name)
    }

    fn lookup(&self, namespace: &str, name: &str) -> CachedPod {
        if !self.listed {
            return CachedPod::Unknown;
        }
        match self.get(namespace, name) {
            Some(_) => CachedPod::Present,
            None => CachedPod::Absent,
        }
    }

    /// The name of the Workspace owning pod `name`, if the index holds the pod.
    fn owner<'a>(&'a self, namespace: &str, name: &'a str) -> Option<&'a str> {
        match self.get(namespace, name)? {
            Owner::NamedByPod => workspace_of_pod(name),
            Owner::Other(owner) => Some(owner),
            Owner::None => None,
        }
    }

    /// The evicted pods being stopped (`Listing::evicting`), once a first list completed.
    fn evicting(&self) -> Option<Vec<PodKey>> {
        self.listed
            .then(|| self.current.evicting.iter().cloned().collect())
    }

    /// The stopping pods by (namespace, name), once a first list completed.
    fn stopping(&self) -> Option<Vec<(PodKey, StoppingPod)>> {
        self.listed.then(|| {
            self.current
                .stopping
                .iter()
                .map(|((namespace, name), pod)| {
                    ((namespace.to_string(), name.to_string()), pod.clone())
                })
                .collect()
        })
    }
}

#[derive(Clone)]
pub struct PodNames {
    index: Arc<Mutex<PodIndex>>,
    /// What running and settled reconciles know of their pods, to drop the events they
    /// need not see (`pod_echoes`).
    echoes: Arc<Mutex<Echoes>>,
    /// Whether the index holds a first complete list, for those who must wait for it.
    listed: Arc<tokio::sync::watch::Sender<bool>>,
}

fn key_of(pod: &impl Resource) -> Option<PodKey> {
    Some((pod.meta().namespace.clone()?, pod.meta().name.clone()?))
}

impl PodNames {
    /// What the cache says about pod `name` in `namespace`.
    pub fn lookup(&self, namespace: &str, name: &str) -> CachedPod {
        match self.index.lock() {
            Ok(index) => index.lookup(namespace, name),
            Err(_) => CachedPod::Unknown,
        }
    }

    /// The Workspace owning the workspace pod `name`, if the cache holds the pod.
    pub fn owner(&self, namespace: &str, name: &str) -> Option<crate::nodes::WorkspaceRef> {
        let index = self.index.lock().ok()?;
        let owner = index.owner(namespace, name)?;
        Some(ObjectRef::new(owner).within(namespace))
    }

    /// The workspace pods being deleted that hold our finalizer (`stopping`), once the
    /// watch's first list is in; `None` before (or if the index is poisoned).
    pub fn stopping(&self) -> Option<Vec<(PodKey, StoppingPod)>> {
        self.index.lock().ok()?.stopping()
    }

    /// The evicted workspace pods told of their stop and still held by lifeguard's
    /// finalizer, once the watch's first list is in; `None` before. A few per draining
    /// node: the set is empty while nothing is evicted.
    pub fn evicting(&self) -> Option<Vec<PodKey>> {
        self.index.lock().ok()?.evicting()
    }

    /// Returns once the watch's first list is in the index. The index fills as the
    /// controller polls the watch's stream.
    pub async fn wait_listed(&self) {
        let mut listed = self.listed.subscribe();
        // An error means every sender is gone, which `self` rules out.
        let _ = listed.wait_for(|listed| *listed).await;
    }

    fn echoes(&self) -> Option<std::sync::MutexGuard<'_, Echoes>> {
        self.echoes.lock().ok()
    }

    /// A reconcile of the workspace of pod `name` in `namespace` starts: the pod's
    /// events are held back until it settles.
    pub fn reconciling(&self, namespace: &str, name: &str) {
        if let Some(mut echoes) = self.echoes() {
            echoes.reconciling((namespace.to_string(), name.to_string()));
        }
    }

    /// It read the pod, or one of its writes of the pod succeeded.
    pub fn known(&self, namespace: &str, name: &str, known: Known) {
        if let Some(mut echoes) = self.echoes() {
            echoes.known(&(namespace.to_string(), name.to_string()), known);
        }
    }

    /// The reconcile is done: whether it must look again because something else changed
    /// the pod while it ran.
    pub fn settle(&self, namespace: &str, name: &str) -> Settled {
        match self.echoes() {
            Some(mut echoes) => echoes.settle(&(namespace.to_string(), name.to_string())),
            // Poisoned: whatever was held back is lost, so look again.
            None => Settled::LookAgain,
        }
    }

    /// Whether this watch event is dropped: one the reconciler knows of (`pod_echoes`).
    fn is_echo(&self, event: &watcher::Event<PartialObjectMeta<Pod>>) -> bool {
        let (pod, seen) = match event {
            watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => (
                pod,
                Seen::Changed {
                    version: pod.metadata.resource_version.clone(),
                    uid: pod.metadata.uid.clone(),
                },
            ),
            watcher::Event::Delete(pod) => (
                pod,
                Seen::Deleted {
                    uid: pod.metadata.uid.clone(),
                },
            ),
            watcher::Event::Init => {
                if let Some(mut echoes) = self.echoes() {
                    echoes.relisting();
                }
                return false;
            }
            watcher::Event::InitDone => return false,
        };
        let (Some(key), Some(mut echoes)) = (key_of(pod), self.echoes()) else {
            return false;
        };
        echoes.is_echo(&key, seen)
    }

    fn index(&self, event: &watcher::Event<PartialObjectMeta<Pod>>) {
        let listed = match self.index.lock() {
            Ok(mut index) => {
                index.apply(event);
                index.listed
            }
            Err(_) => return,
        };
        if listed {
            self.listed
                .send_if_modified(|was| !std::mem::replace(was, true));
        }
    }
}

/// Keeps the name, the namespace, the UID and resource version (for `is_echo`) and the owner
/// references to Workspaces (without `blockOwnerDeletion`, which nothing reads): the
/// controller maps each pod event to its Workspace through them. Of a stopping pod
/// (`stopping::StoppingPod`) also what the sweep reads: the deletion timestamp, our
/// finalizer and the disposal annotations. Of an evicted pod told of its stop and still held
/// by our finalizer, the notice (which marks it for the cluster's eviction budget).
fn strip(pod: &mut PartialObjectMeta<Pod>) {
    let meta = std::mem::take(&mut pod.metadata);
    let stopping = StoppingPod::of(&meta).is_some();
    let notice = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(EVICTION_NOTICE_ANNOTATION))
        .filter(|_| has_finalizer(meta.finalizers.as_ref(), POD_FINALIZER))
        .cloned();
    pod.types = None;
    pod.metadata.name = meta.name;
    pod.metadata.namespace = meta.namespace;
    pod.metadata.resource_version = meta.resource_version;
    pod.metadata.uid = meta.uid;
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
            controller: r.controller,
            ..Default::default()
        })
        .collect();
    pod.metadata.owner_references = (!owners.is_empty()).then_some(owners);
    if stopping {
        pod.metadata.deletion_timestamp = meta.deletion_timestamp;
        pod.metadata.finalizers = Some(vec![POD_FINALIZER.to_string()]);
        let disposal: BTreeMap<String, String> = meta
            .annotations
            .into_iter()
            .flatten()
            .filter(|(k, _)| {
                k == DISPOSAL_CONFIRMATION_ANNOTATION || k == DISPOSAL_RESULT_ANNOTATION
            })
            .collect();
        pod.metadata.annotations = (!disposal.is_empty()).then_some(disposal);
    }
    if let Some(notice) = notice {
        pod.metadata
            .annotations
            .get_or_insert_default()
            .insert(EVICTION_NOTICE_ANNOTATION.to_string(), notice);
    }
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
    let names = PodNames {
        index: Arc::default(),
        echoes: Arc::default(),
        listed: Arc::new(tokio::sync::watch::channel(false).0),
    };
    let (indexer, filter) = (names.clone(), names.clone());
    let events = watcher(
        Api::<PartialObjectMeta<Pod>>::all(client),
        watcher::Config::default().labels(WORKSPACE_LABEL),
    )
    .default_backoff()
    .modify(strip)
    .map_ok(move |event| {
        indexer.index(&event);
        event
    })
    // After the index took it: an echo still records that the pod exists (or is gone).
    .try_filter(move |event| std::future::ready(!filter.is_echo(event)))
    .touched_objects();
    (names, events)
}

#[cfg(test)]
#[path = "pod_names_tests.rs"]
mod tests;
