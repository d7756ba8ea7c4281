//! Removing one finalizer without disturbing anyone else's.
//!
//! A merge patch of `metadata.finalizers` replaces the whole list, so it carries
//! `metadata.resourceVersion`: if another writer changed the object since we read it, the
//! API server answers 409 and we re-read and try again, never dropping a finalizer that
//! was added in between.
//!
//! The first attempt starts from the object the caller read, when it has one (a
//! reconcile has just read it to plan the removal): reading it again would cost a GET per
//! stop, a drain's most frequent call. A stale copy costs nothing but the 409 and the read
//! that the retry does anyway.

use std::fmt::Debug;

use either::Either;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::Status;
use kube::{Resource, ResourceExt};
use lifeguard_api::names::{POD_FINALIZER, RELEASED_ANNOTATION};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::pod_ended;

/// Attempts before giving the conflict back to the reconciler's error policy.
const ATTEMPTS: usize = 5;

#[derive(Debug, PartialEq, Eq)]
pub enum Removal {
    Removed { conflicts: usize },
    NotPresent,
    Gone,
}

/// Removes `finalizer` from `object`, starting from the copy given.
pub async fn remove<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<Removal, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = object.name_any();
    Ok(
        remove_marked(api, &name, Some(object.clone()), finalizer, None)
            .await?
            .0,
    )
}

/// Removes a workspace pod's disposal finalizer and, in the same write, stamps
/// [`RELEASED_ANNOTATION`] so that the kubelet deletes the stopped pod's object at once
/// (see the constant for why).
///
/// A released pod whose containers have all stopped is also deleted without grace (guarded
/// by its UID): the kubelet has nothing left to stop, and otherwise the object waits for
/// the kubelet's status manager, which one stop in twenty left for a whole 10 s sync
/// (`bench-node-drain`, issue 21). A pod with a container still running (or not yet
/// reported) keeps its grace: the kubelet must stop it first.
///
/// `read`: the pod as the caller read it, if it did (the first attempt starts from it).
pub async fn release_pod(
    api: &Api<Pod>,
    name: &str,
    read: Option<&Pod>,
) -> Result<Released, kube::Error> {
    let now = jiff::Timestamp::now();
    let stamp = now.to_string();
    let (removal, patched) = remove_marked(
        api,
        name,
        read.cloned(),
        POD_FINALIZER,
        Some((RELEASED_ANNOTATION, &stamp)),
    )
    .await?;
    let mut writes = Vec::new();
    if let Some(pod) = patched {
        let left = PodLeft::of(pod);
        let delete = match &left {
            PodLeft::Stored(pod) if pod_ended::nothing_left_to_stop(pod, now) => Some(pod.clone()),
            _ => None,
        };
        writes.push(left);
        if let Some(pod) = delete
            && let Some(left) = delete_exactly(api, &pod, Some(0))
                .await?
                .left(pod.metadata.uid.clone())
        {
            writes.push(left);
        }
    }
    Ok(Released { removal, writes })
}

/// What a release did.
#[derive(Debug)]
pub struct Released {
    pub removal: Removal,
    /// What each of its writes left of the pod, in order: the last is the pod as it is now
    /// (a follow-up delete that found the pod removed already leaves it gone). Empty if it
    /// wrote nothing.
    pub writes: Vec<PodLeft>,
}

/// What a write of a pod left of it.
#[derive(Debug, Clone, PartialEq)]
pub enum PodLeft {
    /// The pod as the write stored it.
    Stored(Box<Pod>),
    /// The pod's object, with this UID, is gone.
    Gone { uid: Option<String> },
}

impl PodLeft {
    /// The pod a write answered with. A pod being deleted without grace that no finalizer
    /// holds is not stored: the API server removed it in that write, and answers with its
    /// last state (for a delete and for a patch that takes the last finalizer off).
    pub fn of(pod: Pod) -> PodLeft {
        let meta = &pod.metadata;
        let removed = meta.deletion_timestamp.is_some()
            && meta.deletion_grace_period_seconds == Some(0)
            && meta.finalizers.as_ref().is_none_or(Vec::is_empty);
        if removed {
            PodLeft::Gone {
                uid: pod.metadata.uid,
            }
        } else {
            PodLeft::Stored(Box::new(pod))
        }
    }

    /// What the answer to a delete of the pod with UID `uid` says.
    pub fn of_delete(answer: Either<Pod, Status>, uid: Option<String>) -> PodLeft {
        match answer {
            Either::Left(pod) => PodLeft::of(pod),
            Either::Right(_) => PodLeft::Gone { uid },
        }
    }
}

/// What a delete of exactly one pod found.
#[derive(Debug, Clone, PartialEq)]
pub enum Deletion {
    /// It deleted the pod: what that write left of it.
    Deleted(PodLeft),
    /// No pod of that name was there: this one was removed already, by someone else
    /// (typically its kubelet, a moment before). Nothing was written.
    AlreadyGone,
    /// The name holds another pod now. Nothing was written.
    Replaced,
}

impl Deletion {
    /// What a refused delete's status `code` says, if it says one of these.
    fn of_refusal(code: u16) -> Option<Deletion> {
        match code {
            // Not found: with the UID as a precondition, a pod of another UID under the
            // name would have been a conflict, so no pod of that name is there at all.
            404 => Some(Deletion::AlreadyGone),
            409 => Some(Deletion::Replaced),
            _ => None,
        }
    }

    /// What is left of the pod with UID `uid` after this delete: `None` when the name
    /// holds another pod (this one's fate is not known from here).
    pub fn left(self, uid: Option<String>) -> Option<PodLeft> {
        match self {
            Deletion::Deleted(left) => Some(left),
            Deletion::AlreadyGone => Some(PodLeft::Gone { uid }),
            Deletion::Replaced => None,
        }
    }
}

/// Deletes exactly `pod` with `grace_seconds`: its UID is a precondition, so a replacement
/// of the same name is never hit.
pub async fn delete_exactly(
    api: &Api<Pod>,
    pod: &Pod,
    grace_seconds: Option<u32>,
) -> Result<Deletion, kube::Error> {
    let params = DeleteParams {
        grace_period_seconds: grace_seconds,
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&pod.name_any(), &params).await {
        Ok(answer) => Ok(Deletion::Deleted(PodLeft::of_delete(
            answer,
            pod.metadata.uid.clone(),
        ))),
        Err(kube::Error::Api(status)) => {
            Deletion::of_refusal(status.code).ok_or(kube::Error::Api(status))
        }
        Err(e) => Err(e),
    }
}

/// The removal, and on success the object as the patch left it. `read`: the caller's copy
/// of the object, for the first attempt.
async fn remove_marked<K>(
    api: &Api<K>,
    name: &str,
    mut read: Option<K>,
    finalizer: &str,
    mark: Option<(&str, &str)>,
) -> Result<(Removal, Option<K>), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let mut conflicts = 0;
    loop {
        let object = match read.take() {
            Some(object) => object,
            None => match api.get_opt(name).await? {
                Some(object) => object,
                None => return Ok((Removal::Gone, None)),
            },
        };
        let finalizers = object.finalizers();
        if !finalizers.iter().any(|f| f == finalizer) {
            return Ok((Removal::NotPresent, None));
        }
        let kept: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
        let mut patch = json!({"metadata": {
            "finalizers": kept,
            "resourceVersion": object.resource_version(),
        }});
        if let Some((key, value)) = mark {
            patch["metadata"]["annotations"] = json!({key: value});
        }
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(patched) => return Ok((Removal::Removed { conflicts }, Some(patched))),
            Err(kube::Error::Api(status)) if status.code == 409 && conflicts + 1 < ATTEMPTS => {
                conflicts += 1;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {
                return Ok((Removal::Gone, None));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Adds a finalizer, with the same optimistic lock.
/// Returns the object as stored after the patch, or `None` when it already had it.
pub async fn add<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let mut finalizers = object.finalizers().to_vec();
    if finalizers.iter().any(|f| f == finalizer) {
        return Ok(None);
    }
    finalizers.push(finalizer.to_string());
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": object.resource_version(),
    }});
    api.patch(
        &object.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(Some)
}

#[cfg(test)]
#[path = "finalizers_tests.rs"]
mod tests;
