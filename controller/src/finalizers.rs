//! Removing one finalizer without disturbing anyone else's.
//!
//! A merge patch of `metadata.finalizers` replaces the whole list, so it carries
//! `metadata.resourceVersion`: if another writer changed the object since we read it, the
//! API server answers 409 and we re-read and try again, never dropping a finalizer that
//! was added in between.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use lifeguard_api::names::{POD_FINALIZER, RELEASED_ANNOTATION};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// Attempts before giving the conflict back to the reconciler's error policy.
const ATTEMPTS: usize = 5;

#[derive(Debug, PartialEq, Eq)]
pub enum Removal {
    Removed { conflicts: usize },
    NotPresent,
    Gone,
}

pub async fn remove<K>(api: &Api<K>, name: &str, finalizer: &str) -> Result<Removal, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    remove_marked(api, name, finalizer, None).await
}

/// Removes a workspace pod's disposal finalizer and, in the same write, stamps
/// [`RELEASED_ANNOTATION`] so that the kubelet deletes the stopped pod's object at once
/// (see the constant for why).
pub async fn release_pod(api: &Api<Pod>, name: &str) -> Result<Removal, kube::Error> {
    let now = jiff::Timestamp::now().to_string();
    remove_marked(api, name, POD_FINALIZER, Some((RELEASED_ANNOTATION, &now))).await
}

async fn remove_marked<K>(
    api: &Api<K>,
    name: &str,
    finalizer: &str,
    mark: Option<(&str, &str)>,
) -> Result<Removal, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let mut conflicts = 0;
    loop {
        let Some(object) = api.get_opt(name).await? else {
            return Ok(Removal::Gone);
        };
        let finalizers = object.finalizers();
        if !finalizers.iter().any(|f| f == finalizer) {
            return Ok(Removal::NotPresent);
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
            Ok(_) => return Ok(Removal::Removed { conflicts }),
            Err(kube::Error::Api(status)) if status.code == 409 && conflicts + 1 < ATTEMPTS => {
                conflicts += 1;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Removal::Gone),
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
