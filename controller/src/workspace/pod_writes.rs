//! What the workspace reconciler reads and writes of its pod, told to the cache of pod
//! names so that the watch events of those states are dropped (`crate::pod_echoes`): the
//! reconcile plans with what it read, and again with what each write returned.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::Api;

use crate::finalizers::{self, Deletion, PodLeft, Released};
use crate::pod_echoes::{Known, Settled};
use crate::pod_names::PodNames;
use crate::workspace::pod_read::CachedPod;
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

    /// The reconcile read the pod: `None`, it found none.
    pub fn read(&self, pod: Option<&Pod>) {
        match pod {
            Some(pod) => {
                if let Some(version) = &pod.metadata.resource_version {
                    self.pods
                        .known(self.namespace, self.name, Known::Read(version.clone()));
                }
            }
            // The deletion of the pod that was there says nothing the reconcile did not
            // plan with. Awaited only while the watch still has the pod: a read of a pod
            // gone long ago must not hold an expectation for ever.
            None => {
                let watched = self.pods.lookup(self.namespace, self.name) == CachedPod::Present;
                self.pods
                    .known(self.namespace, self.name, Known::Absent { watched });
            }
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

/// Deletes exactly `pod` (`finalizers::delete_exactly`), telling the cache of pod names
/// what is left: a pod found removed already is known gone as well, so its deletion event
/// costs no reconcile.
pub async fn delete_pod(
    ctx: &Context,
    pods: &Api<Pod>,
    pod: &Pod,
    grace_seconds: Option<u32>,
) -> Result<Deletion, Error> {
    let (namespace, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
    let deletion = finalizers::delete_exactly(pods, pod, grace_seconds).await?;
    match &deletion {
        Deletion::Deleted(left) => note_written(ctx, &namespace, &name, left),
        Deletion::AlreadyGone => {
            let gone = PodLeft::Gone {
                uid: pod.metadata.uid.clone(),
            };
            note_written(ctx, &namespace, &name, &gone);
        }
        Deletion::Replaced => {}
    }
    Ok(deletion)
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
