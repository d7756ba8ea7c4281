//! Sweeps for pods that would otherwise stay Terminating: once the controller's caches are
//! in and every `--sweep-interval` after, every workspace pod deleting with our finalizer
//! whose Workspace is gone, or that has been deleting a disposal timeout past the
//! reconciler's own deadline for it (`stopping::release_cause`), is released. "Its Workspace" is the one its controlling owner reference names by UID: a
//! pod left by a deleted Workspace is released even when a new Workspace of the same name
//! exists (which never adopts it).
//!
//! The stopping pods come from the pod watch (`pod_names`, `stopping`) and the Workspaces
//! from the controller's cache: a sweep makes no list, and asks the API only about the pods
//! it may release (a fresh read of the pod and of its Workspace, then the release).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use lifeguard_api::Workspace;

use crate::finalizers::{self, Removal};
use crate::metrics::Metrics;
use crate::pod_names::PodNames;
use crate::stopping::{self, StoppingPod, release_cause};
use crate::workspace::plan::Settings;

/// What the sweep reads: the stopping pods and the Workspaces the controller caches.
#[derive(Clone)]
pub struct Caches {
    pub pods: PodNames,
    pub workspaces: Store<PartialObjectMeta<Workspace>>,
}

/// One sweep: returns how many pods it released. A pod whose look fails is logged and left
/// for the next sweep; the others are still swept.
pub async fn sweep_once(
    client: &Client,
    caches: &Caches,
    settings: &Settings,
    metrics: &Metrics,
) -> usize {
    let Some(stopping) = caches.pods.stopping() else {
        tracing::debug!("sweep skipped: the pod watch has not listed yet");
        return 0;
    };
    let now = Timestamp::now();
    metrics
        .stopping_pods
        .set(i64::try_from(stopping.len()).unwrap_or(i64::MAX));
    let oldest = stopping::oldest_deleting(stopping.iter().map(|(_, pod)| pod), now);
    metrics.stopping_pod_oldest.set(oldest.as_secs());
    let mut released = 0;
    for ((namespace, name), pod) in stopping {
        let cached = pod.owner.as_ref().is_some_and(|owner| {
            let workspace = ObjectRef::new(&owner.name).within(&namespace);
            caches.workspaces.get(&workspace).is_some()
        });
        if !stopping::worth_a_look(&pod, cached, now, settings) {
            continue;
        }
        match look(client, &namespace, &name, settings, metrics).await {
            Ok(true) => released += 1,
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(pod = %name, %namespace, %error, "sweep could not release pod; trying again next interval");
            }
        }
    }
    released
}

/// Reads the pod and its Workspace fresh and releases the pod if the caches were right.
async fn look(
    client: &Client,
    namespace: &str,
    name: &str,
    settings: &Settings,
    metrics: &Metrics,
) -> Result<bool, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let Some(fresh) = pods.get_metadata_opt(name).await? else {
        return Ok(false);
    };
    let Some(pod) = StoppingPod::of(&fresh.metadata) else {
        return Ok(false);
    };
    let exists = match &pod.owner {
        None => false,
        Some(owner) => {
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), namespace);
            workspaces
                .get_metadata_opt(&owner.name)
                .await?
                .is_some_and(|w| w.metadata.uid.as_deref() == Some(&*owner.uid))
        }
    };
    let Some(cause) = release_cause(&pod, exists, Timestamp::now(), settings) else {
        return Ok(false);
    };
    match finalizers::release_pod(&pods, name, None).await? {
        Removal::Removed { .. } => {
            metrics.sweep_releases.with_label_values(&[cause]).inc();
            tracing::info!(pod = %name, %namespace, cause, "sweep released pod");
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Sweeps once the caches are in (or an interval has passed without them: the node signal
/// sweep does not need them), then every `every`.
pub async fn run(
    client: Client,
    caches: Caches,
    settings: Settings,
    metrics: Metrics,
    every: Duration,
) {
    let filled = async {
        caches.pods.wait_listed().await;
        // Only fails once the cache's writer is gone, when the controller stops.
        let _ = caches.workspaces.wait_until_ready().await;
    };
    if tokio::time::timeout(every, filled).await.is_err() {
        tracing::warn!("the controller's caches are not filled yet; sweeping what they hold");
    }
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let released = sweep_once(&client, &caches, &settings, &metrics).await;
        if released > 0 {
            tracing::info!(released, "sweep done");
        }
        // Node signals of windows deleted while no controller led (or whose immediate
        // clean-up failed).
        if let Err(error) = crate::window::node_signal::sweep(&client).await {
            tracing::warn!(%error, "node signal sweep failed; trying again next interval");
        }
        crate::memory::release_free_heap();
    }
}
