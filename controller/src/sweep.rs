//! Sweeps for pods that would otherwise stay Terminating: once the controller's caches are
//! in and every `--sweep-interval` after, every workspace pod deleting with our finalizer
//! whose Workspace is gone, or that has been deleting a disposal timeout past the
//! reconciler's own deadline for it (`stopping::release_cause`), is released. "Its
//! Workspace" is the one its controlling owner reference names by UID: a pod left by a
//! deleted Workspace is released even when a new Workspace of the same name exists (which
//! never adopts it).
//!
//! The stopping pods come from the pod watch (`pod_names`, `stopping`) and the Workspaces
//! from the controller's cache: a sweep makes no list, and asks the API only about the pods
//! it may release (a fresh read of the pod and of its Workspace, then the release; for a
//! pod whose disposal waits for its backup agent, first its receipt and the outcome written
//! on the Workspace, as the reconciler would).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use lifeguard_api::Workspace;

use lifeguard_api::receipt::{self, DisposalReceipt, ReceiptReading};
use lifeguard_api::workspace::condition::DISPOSAL_CONFIRMED;

use crate::FIELD_MANAGER;
use crate::disposal;
use crate::finalizers::{self, Removal};
use crate::metrics::Metrics;
use crate::pod_names::PodNames;
use crate::stopping::{self, StoppingPod, release_cause};
use crate::workspace::plan::{Action, Settings};

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
    // Read whole: a pod that waits for its agent has its outcome recorded on it below.
    // Only overdue pods get here, so the few bytes more than its metadata are rare.
    let workspace = match &pod.owner {
        None => None,
        Some(owner) => {
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), namespace);
            workspaces
                .get_opt(&owner.name)
                .await?
                .filter(|w| w.metadata.uid.as_deref() == Some(&*owner.uid))
        }
    };
    let exists = workspace.is_some();
    let now = Timestamp::now();
    let Some(cause) = release_cause(&pod, exists, now, settings) else {
        return Ok(false);
    };
    // Whether the agent answered or not: an answer by annotation is recorded by the
    // reconciler too, so a sweep stepping in for it must record it.
    let confirmed_by_agent =
        lifeguard_api::disposal::confirmation_required(fresh.metadata.annotations.as_ref());
    if let (true, Some(ws)) = (confirmed_by_agent, &workspace) {
        let waiting = Pod {
            metadata: fresh.metadata,
            ..Pod::default()
        };
        if !record_disposal(client, ws, &waiting, now, settings, metrics).await? {
            return Ok(false);
        }
    }
    match finalizers::release_pod(&pods, name, None).await?.removal {
        Removal::Removed { .. } => {
            metrics.sweep_releases.with_label_values(&[cause]).inc();
            tracing::info!(pod = %name, %namespace, cause, "sweep released pod");
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Records on its Workspace the disposal outcome of an overdue pod that waits for its
/// backup agent, as the reconciler does before it releases such a pod (`disposal::release`):
/// the agent's answer if a receipt of this pod's came, else `TimedOut`. The sweep steps in
/// only for a reconciler that did not act by its own deadline (in a saturated drain, one
/// too busy to); without this the pod would go with no outcome on record, and a drain
/// would count its work as disposed of. Returns whether the pod may be released now.
async fn record_disposal(
    client: &Client,
    ws: &Workspace,
    pod: &Pod,
    now: Timestamp,
    settings: &Settings,
    metrics: &Metrics,
) -> Result<bool, kube::Error> {
    let namespace = ws.metadata.namespace.as_deref().unwrap_or_default();
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), namespace);
    let receipts: Api<DisposalReceipt> = Api::namespaced(client.clone(), namespace);
    let receipt = match pod.metadata.uid.as_deref() {
        Some(uid) => {
            receipts
                .get_opt(uid)
                .await?
                .and_then(|found| match receipt::read(&found, pod) {
                    ReceiptReading::Answer(answer) => Some(answer),
                    ReceiptReading::Ignored(_) => None,
                })
        }
        None => None,
    };
    let status = match disposal::release(ws, pod, receipt, now, settings) {
        Action::RecordDisposal(status) => status,
        // Recorded already (the reconciler got there), or, with other settings than the
        // caller's deadline assumed, not due yet.
        Action::WaitUntil(_) => return Ok(false),
        _ => return Ok(true),
    };
    let name = ws.metadata.name.as_deref().unwrap_or_default();
    lifeguard_runtime::status::apply(&workspaces, name, FIELD_MANAGER, &*status).await?;
    if let Some(c) = status
        .conditions
        .iter()
        .find(|c| c.type_ == DISPOSAL_CONFIRMED && c.status != "True")
    {
        let label = disposal::unconfirmed_label(&c.reason);
        metrics
            .disposals_unconfirmed
            .with_label_values(&[label])
            .inc();
    }
    tracing::info!(workspace = %name, %namespace, "sweep recorded the disposal outcome before releasing the pod");
    Ok(true)
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
