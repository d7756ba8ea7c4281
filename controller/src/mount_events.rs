//! Why a starting pod's volume does not mount: the kubelet says so only in Events
//! (`FailedMount`, `FailedAttachVolume`), never in the pod's status. The controller watches
//! those Events (one watch per reason, filtered by the API server) and keeps the latest one
//! per pod, so a reconcile reads a pod's mount failure from memory, and a new or repeated
//! failure triggers its workspace's reconcile at once.
//!
//! Before, each look at a pod still creating its containers listed that pod's Events with a
//! field selector, and looked again every 20 s. The API server serves such a list by
//! scanning every Event of the namespace: with 10,000 workspaces starting in one namespace
//! (`bench-controller-rss`) each list took 0.6 s of the API server, the 16 reconcile slots
//! spent their time on them, and new Workspaces waited minutes for their pod.
//!
//! Memory: one entry per pod with a live mount-failure Event, a short message each. An
//! entry goes when its Event does (the API server deletes Events after `--event-ttl`, an
//! hour by default) and [`MAX_PODS`] bounds the rest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use lifeguard_api::start_blocker::MOUNT_EVENT_REASONS;

use crate::nodes::WorkspaceRef;
use crate::pod_names::PodNames;

/// Pods whose mount failure is kept at most; past it the oldest failures are forgotten
/// (their pods only lose the detail of the blocker, never their start deadline).
pub const MAX_PODS: usize = 10_000;

/// The latest mount failure of one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct MountFailure {
    /// The Event's name, so that its deletion removes exactly it.
    event: String,
    pub reason: String,
    pub message: String,
    pub at: Timestamp,
}

/// What a mount-failure Event says, if it is one of a pod: the pod's UID, namespace, name
/// and the failure.
pub fn read(event: &Event) -> Option<(String, String, String, MountFailure)> {
    let reason = event.reason.as_deref()?;
    if !MOUNT_EVENT_REASONS.contains(&reason)
        || event.involved_object.kind.as_deref() != Some("Pod")
    {
        return None;
    }
    let involved = &event.involved_object;
    let at = event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or(event.event_time.as_ref().map(|t| t.0))
        .or(event.first_timestamp.as_ref().map(|t| t.0))
        .or(event.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    // Cut as an Event note is (it is told in the Workspace's condition and Events): the
    // kubelet's messages are a line or two, a longer one is not kept whole.
    let message = lifeguard_runtime::events::fit_note(event.message.as_deref().unwrap_or_default());
    Some((
        involved.uid.clone()?,
        involved
            .namespace
            .clone()
            .or(event.metadata.namespace.clone())?,
        involved.name.clone()?,
        MountFailure {
            event: event.name_any(),
            reason: reason.to_owned(),
            message,
            at,
        },
    ))
}

/// The latest mount failure per pod UID. Pure: the watch feeds it, reconciles read it.
#[derive(Debug, Default)]
pub struct Latest {
    by_pod: HashMap<String, MountFailure>,
}

impl Latest {
    /// Keeps `failure` unless the pod has a later one. True when what the pod's reconcile
    /// would read changed.
    pub fn record(&mut self, pod_uid: &str, failure: MountFailure) -> bool {
        if let Some(held) = self.by_pod.get(pod_uid)
            && (held.at > failure.at || *held == failure)
        {
            return false;
        }
        if !self.by_pod.contains_key(pod_uid) && self.by_pod.len() >= MAX_PODS {
            let oldest = self
                .by_pod
                .iter()
                .min_by_key(|(_, f)| f.at)
                .map(|(uid, _)| uid.clone());
            if let Some(oldest) = oldest {
                self.by_pod.remove(&oldest);
            }
        }
        self.by_pod.insert(pod_uid.to_owned(), failure);
        true
    }

    /// The Event `event` of the pod is gone: forget it, if it is the one held.
    pub fn forget(&mut self, pod_uid: &str, event: &str) {
        if self.by_pod.get(pod_uid).is_some_and(|f| f.event == event) {
            self.by_pod.remove(pod_uid);
        }
    }

    pub fn get(&self, pod_uid: &str) -> Option<&MountFailure> {
        self.by_pod.get(pod_uid)
    }

    pub fn len(&self) -> usize {
        self.by_pod.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_pod.is_empty()
    }
}

/// The controller's view of mount failures, shared by the watch and the reconciles.
#[derive(Clone, Default)]
pub struct MountEvents(Arc<Mutex<Latest>>);

impl MountEvents {
    /// The pod's latest mount failure, as `(reason, message)`.
    pub fn latest(&self, pod_uid: &str) -> Option<(String, String)> {
        let latest = self.0.lock().ok()?;
        latest
            .get(pod_uid)
            .map(|f| (f.reason.clone(), f.message.clone()))
    }

    fn apply(&self, event: &Event) -> Option<(String, String)> {
        let (uid, namespace, name, failure) = read(event)?;
        let mut latest = self.0.lock().ok()?;
        latest.record(&uid, failure).then_some((namespace, name))
    }

    fn delete(&self, event: &Event) {
        if let (Some((uid, ..)), Ok(mut latest)) = (read(event), self.0.lock()) {
            latest.forget(&uid, &event.name_any());
        }
    }
}

/// Watches the mount-failure Events. Returns the shared view and the workspaces to
/// reconcile because their pod's mount failure is new (the pod's owner, from the cache of
/// workspace pods; a pod that is not a workspace's triggers nothing).
pub fn watch(
    client: Client,
    pods: PodNames,
) -> (
    MountEvents,
    impl Stream<Item = WorkspaceRef> + Send + 'static,
) {
    let events = MountEvents::default();
    let view = events.clone();
    let api: Api<Event> = Api::all(client);
    // A field selector cannot say "one of": one watch per reason.
    let streams = MOUNT_EVENT_REASONS.map(|reason| {
        let config =
            watcher::Config::default().fields(&format!("reason={reason},involvedObject.kind=Pod"));
        watcher(api.clone(), config).default_backoff().boxed()
    });
    let triggers = futures::stream::select_all(streams).filter_map(move |event| {
        let trigger = match event {
            Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => events
                .apply(&e)
                .and_then(|(namespace, name)| pods.owner(&namespace, &name)),
            Ok(watcher::Event::Delete(e)) => {
                events.delete(&e);
                None
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
            Err(error) => {
                tracing::warn!(%error, "watching mount-failure Events failed; retrying");
                None
            }
        };
        std::future::ready(trigger)
    });
    (view, triggers)
}

#[cfg(test)]
#[path = "mount_events_tests.rs"]
mod tests;
