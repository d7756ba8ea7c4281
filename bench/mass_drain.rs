//! The mass-drain half of `bench-mass-start`: with the N workspaces Running on the simulated
//! nodes, a window with `drain: true` over their namespace, timed from its creation to
//! its `Drained` condition and to the last pod gone; the baseline, measured in the same
//! run, is the same number of pods deleted directly by this client with the same
//! concurrency (each with its own 1 s grace period, as the drained pods have).

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::{MaintenanceWindow, Workspace, WorkspacePhase};
use lifeguard_e2e::{poll_until, rfc3339, unique_name, wait_drained};
use serde_json::json;

use super::PHASE_TIMEOUT;

/// The namespace label a bench window selects its namespace by.
pub const NAMESPACE_LABEL: &str = "bench-namespace";

/// Seconds until no pod is left in the namespace. Each look asks for one pod: a list of
/// thousands four times a second would cost the API server more than the phase it times.
async fn until_no_pods(pods: &Api<Pod>, started: Instant) -> anyhow::Result<Duration> {
    let one = ListParams::default().limit(1);
    poll_until("all pods gone", PHASE_TIMEOUT, || async {
        if let Some(left) = pods.list_metadata(&one).await?.items.first() {
            anyhow::bail!("pods left, {} among them", left.name_any());
        }
        Ok(Some(started.elapsed()))
    })
    .await
}

/// Before the baseline, untimed: the disposal finalizer lifeguard's webhook stamped on
/// these workspace-labelled pods is taken off (no controller owns them, and a plain drain
/// does not do it). Returns the pods' names.
pub async fn unfinalize_all(pods: &Api<Pod>, concurrency: usize) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = pods
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    let unfinalized = json!({"metadata": {"finalizers": null}});
    let unfinalized = &unfinalized;
    stream::iter(&names)
        .map(|name| async move {
            pods.patch(name, &PatchParams::default(), &Patch::Merge(unfinalized))
                .await
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(names)
}

/// The baseline: every pod in `names` deleted directly (its grace period kept),
/// `concurrency` deletes in flight; the time from the first delete to the last pod gone.
pub async fn delete_directly(
    pods: &Api<Pod>,
    names: &[String],
    concurrency: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    stream::iter(names)
        .map(|name| async move {
            match pods.delete(name, &DeleteParams::default()).await {
                Ok(_) => anyhow::Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                Err(e) => Err(e.into()),
            }
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<()>>()
        .await?;
    until_no_pods(pods, started).await
}

pub struct Drain {
    pub drained: Duration,
    pub pods_gone: Duration,
    pub stopped: usize,
}

/// A window with `drain: true` over namespace `ns` (no budget, no handshake), from its
/// creation to `Drained`, and to the last pod gone; then it is deleted.
pub async fn drain_by_window(client: &Client, ns: &str, n: usize) -> anyhow::Result<Drain> {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let name = unique_name("bench-mass-drain");
    let now = Timestamp::now();
    let window: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "start": rfc3339(now - SignedDuration::from_secs(5)),
            "end": rfc3339(now + SignedDuration::from_mins(60)),
            "drain": true,
            "message": "bench-mass-start: mass drain",
            "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}},
        }
    }))?;
    let started = Instant::now();
    windows.create(&PostParams::default(), &window).await?;
    let result = async {
        // Timed apart: the last pod can be gone well before the window's next survey sees
        // every workspace Stopped and sets `Drained`.
        let (drained, pods_gone) = tokio::try_join!(
            wait_drained(client, &name, started, PHASE_TIMEOUT),
            until_no_pods(&pods, started)
        )?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
        let stopped = workspaces
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|w| w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Stopped))
            .count();
        anyhow::ensure!(
            stopped == n,
            "{stopped} of {n} workspaces Stopped after the drain"
        );
        Ok(Drain {
            drained,
            pods_gone,
            stopped,
        })
    }
    .await;
    let _ = windows.delete(&name, &DeleteParams::default()).await;
    result
}
