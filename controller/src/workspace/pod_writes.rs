//! What the workspace reconciler reads and writes of its pod, told to the cache of pod
//! names so that the watch events of those states are dropped (`crate::pod_echoes`): the
//! reconcile plans with what it read, and again with what each write returned.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::Api;

use crate::finalizers::{self, PodLeft, Released};
use crate::pod_echoes::{Known, Settled};
use crate::pod_names::PodNames;
use crate::{Context, Error};

/// One reconcile's view of its pod: started with the cache of pod names when the reconcile
/// starts, settled when it is done (`pod_echoes`), also when it fails or is dropped
/// half-way, so that no pod's events stay held back.
pub struct PodView<'a> {
    pods: &'a PodNames,
    namespace: &'a str,
    name: &'a str,
    settled: bool,
}

impl<'a> PodView<'a> {
    pub fn new(pods: &'a PodNames, namespace: &'a str, name: &'a str) -> Self {
        pods.reconciling(namespace, name);
        PodView {
            pods,
            namespace,
            name,
            settled: false,
        }
    }

    /// The reconcile read the pod.
    pub fn read(&self, pod: &Pod) {
        if let Some(version) = &pod.metadata.resource_version {
            self.pods
                .known(self.namespace, self.name, Known::Read(version.clone()));
        }
    }

    pub fn settle(mut self) -> Settled {
        self.settled = true;
        self.pods.settle(self.namespace, self.name)
    }
}

impl Drop for PodView<'_> {
    fn drop(&mut self) {
        if !self.settled {
            // Dropped half-way (the controller stops leading): nothing to look again for.
            let _ = self.pods.settle(self.namespace, self.name);
        }
    }
}

/// Tells the cache of pod names what a write of pod `name` in `namespace` left.
pub fn note_written(ctx: &Context, namespace: &str, name: &str, left: &PodLeft) {
    let known = match left {
        PodLeft::Stored(pod) => pod.metadata.resource_version.clone().map(Known::Written),
        PodLeft::Gone { uid } => uid.clone().map(Known::Removed),
    };
    // Without a version or UID nothing matches its events: they look like news, and the
    // reconcile looks again.
    if let Some(known) = known {
        ctx.pods.known(namespace, name, known);
    }
}

/// Deletes exactly `pod` (`finalizers::delete_exactly`), telling the cache of pod names.
pub async fn delete_pod(
    ctx: &Context,
    pods: &Api<Pod>,
    pod: &Pod,
    grace_seconds: Option<u32>,
) -> Result<Option<PodLeft>, Error> {
    let (namespace, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
    let left = finalizers::delete_exactly(pods, pod, grace_seconds).await?;
    if let Some(left) = &left {
        note_written(ctx, &namespace, &name, left);
    }
    Ok(left)
}

/// Releases pod `name` in `namespace` (`finalizers::release_pod`), telling the cache of pod names.
pub async fn release_pod(
    ctx: &Context,
    pods: &Api<Pod>,
    (namespace, name): (&str, &str),
    read: Option<&Pod>,
) -> Result<Released, Error> {
    let released = finalizers::release_pod(pods, name, read).await?;
    for left in &released.writes {
        note_written(ctx, namespace, name, left);
    }
    Ok(released)
}
