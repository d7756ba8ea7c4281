//! Benchmark: how long from the kubelet rejecting a workspace pod to its replacement being
//! created, with N workspaces starting while the node label flaps (about a fifth of the
//! starts rejected). Measured from a pod watch: the instant the rejected pod is first
//! seen Failed to the instant the same-named replacement is first seen, reported per
//! re-creation attempt (the replacement's `lifeguard.dev/recreation`): the backoff doubles
//! with each attempt, and the target (`--backoff` + 1 s) is the first attempt's.
//!
//!   cargo run --release -p lifeguard-e2e --bin bench-recreation -- [N] [SECONDS]
//!
//! The N workspaces are created one by one over SECONDS (default 120).
//!
//! Needs the local run (`./local-up`); reads the controller's `--backoff` from its Deployment.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_api::names::RECREATION_ANNOTATION;
use lifeguard_e2e::{
    Component, Rejector, apply_crds, arg_value, declared_container, node_name, sleeping_workspace,
    unique_name,
};
use serde_json::json;

/// The installed controller's `--backoff`, as its Deployment declares it.
async fn controller_backoff(client: &Client) -> anyhow::Result<String> {
    let controller = declared_container(client, Component::Controller).await?;
    Ok(arg_value(&controller, "--backoff").unwrap_or_else(|| "15s (default)".into()))
}

fn rejected(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Failed")
            && s.container_statuses.as_ref().is_none_or(|c| c.is_empty())
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Latencies by re-creation attempt (0 when the replacement does not say).
type ByAttempt = BTreeMap<u32, Vec<Duration>>;

/// Watches pods and returns one latency per replacement seen, by attempt.
async fn measure(pods: Api<Pod>, running: Arc<AtomicBool>) -> anyhow::Result<ByAttempt> {
    let mut rejected_at: HashMap<String, (String, Instant)> = HashMap::new();
    let mut latencies = ByAttempt::new();
    let mut events = watcher(pods, watcher::Config::default())
        .applied_objects()
        .boxed();
    while running.load(Ordering::Acquire) {
        let Ok(next) = tokio::time::timeout(Duration::from_secs(1), events.try_next()).await else {
            continue;
        };
        let Some(pod) = next? else { break };
        let (name, uid) = (pod.name_any(), pod.uid().unwrap_or_default());
        if rejected(&pod) {
            rejected_at.entry(name).or_insert((uid, Instant::now()));
        } else if let Some((old_uid, at)) = rejected_at.get(&name)
            && *old_uid != uid
        {
            let attempt = pod
                .annotations()
                .get(RECREATION_ANNOTATION)
                .and_then(|a| a.parse().ok())
                .unwrap_or(0);
            latencies.entry(attempt).or_default().push(at.elapsed());
            rejected_at.remove(&name);
        }
    }
    Ok(latencies)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let seconds: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(120);
    let client: Client = lifeguard_e2e::client().await?;
    apply_crds(&client).await?;
    let ns = unique_name("bench-recreation");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    // Pods are refused until the namespace's service account has its token.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let node = node_name(&client).await?;
    let rejector = Arc::new(Rejector::new(
        &client,
        &node,
        &format!("lifeguard.dev/{}", unique_name("bench")),
    ));
    rejector.admit().await?;
    let running = Arc::new(AtomicBool::new(true));
    let watching = tokio::spawn(measure(
        Api::namespaced(client.clone(), &ns),
        running.clone(),
    ));
    let flapping = {
        let (rejector, running) = (rejector.clone(), running.clone());
        tokio::spawn(async move { rejector.flap(running).await })
    };
    // One by one over the run, so that starts meet the rejection spells in proportion.
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
    let pause = Duration::from_secs(seconds) / n.max(1) as u32;
    let mut created = Vec::new();
    for i in 0..n {
        let ws = sleeping_workspace(&format!("bench-{i:03}"), &rejector)?;
        created.push(
            workspaces
                .create(&PostParams::default(), &ws)
                .await
                .map(|_| ()),
        );
        tokio::time::sleep(pause).await;
    }
    // The last starts' re-creations.
    tokio::time::sleep(Duration::from_secs(20)).await;
    running.store(false, Ordering::Release);
    let spells = flapping.await.context("flapper")??;
    rejector.admit().await?;
    let mut latencies = watching.await.context("watcher")??;
    let _ = namespaces.delete(&ns, &DeleteParams::background()).await;
    created
        .into_iter()
        .collect::<Result<Vec<()>, kube::Error>>()?;

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("workspaces: {n}, created over {seconds} s ({spells} rejection spells)");
    println!("controller backoff: {}", controller_backoff(&client).await?);
    for (attempt, latencies) in &mut latencies {
        latencies.sort();
        println!(
            "rejection -> replacement created, attempt {attempt}: n={} p50={:.0} ms p99={:.0} ms max={:.0} ms",
            latencies.len(),
            ms(percentile(latencies, 50.0)),
            ms(percentile(latencies, 99.0)),
            ms(latencies.last().copied().unwrap_or_default()),
        );
    }
    Ok(())
}
