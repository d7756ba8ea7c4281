//! The workspace reconciler's writes of a pod, told to the cache of pod names so that
//! their watch events are dropped as echoes (`crate::pod_echoes`): the reconcile plans
//! again with what each write returned instead.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::Api;

use crate::finalizers::{self, PodLeft, Released};
use crate::pod_echoes::{Settled, Written};
use crate::pod_names::PodNames;
use crate::{Context, Error};

/// One reconcile's writes of its pod, settled with the cache of pod names when the
/// reconcile is done (`pod_echoes`): also when it fails or is dropped half-way, so that no
/// pod's events stay held back.
pub struct PodWrites<'a> {
    pods: &'a PodNames,
    namespace: &'a str,
    name: &'a str,
    settled: bool,
}

impl<'a> PodWrites<'a> {
    pub fn new(pods: &'a PodNames, namespace: &'a str, name: &'a str) -> Self {
        PodWrites {
            pods,
            namespace,
            name,
            settled: false,
        }
    }

    pub fn settle(mut self) -> Settled {
        self.settled = true;
        self.pods.settle(self.namespace, self.name)
    }
}

impl Drop for PodWrites<'_> {
    fn drop(&mut self) {
        if !self.settled {
            // Dropped half-way (the controller stops leading): nothing to look again for.
            let _ = self.pods.settle(self.namespace, self.name);
        }
    }
}

/// Tells the cache of pod names what a write of `pod` (named, in its namespace) left.
fn note_written(ctx: &Context, namespace: &str, name: &str, left: &PodLeft) {
    let written = match left {
        PodLeft::Stored(pod) => match &pod.metadata.resource_version {
            Some(version) => Written::At(version.clone()),
            // Nothing to match its echo by: the echo will look like a change, and the
            // reconcile looks again.
            None => return,
        },
        PodLeft::Gone => Written::Gone,
    };
    ctx.pods.written(namespace, name, written);
}

/// Deletes exactly `pod` (`finalizers::delete_exactly`), telling the cache of pod names.
pub async fn delete_pod(
    ctx: &Context,
    pods: &Api<Pod>,
    pod: &Pod,
    grace_seconds: Option<u32>,
) -> Result<Option<PodLeft>, Error> {
    let (namespace, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
    ctx.pods.writing(&namespace, &name);
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
    ctx.pods.writing(namespace, name);
    let released = finalizers::release_pod(pods, name, read).await?;
    for left in &released.writes {
        note_written(ctx, namespace, name, left);
    }
    Ok(released)
}
