//! Benchmark: pod CREATE latency through the real API server with lifeguard's webhooks
//! registered versus none, measured in one run with the two settings interleaved.
//!
//!   cargo run --release -p lifeguard-e2e --bin bench-pod-create -- [PODS_PER_ROUND] [ROUNDS]

use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

const NAMESPACE: &str = "lifeguard-bench";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

async fn create_batch(pods: &Api<Pod>, prefix: &str, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("{prefix}-{i}"), "labels": {"lifeguard.dev/workspace": "bench"}},
            "spec": {"nodeName": "bench-nowhere",
                     "containers": [{"name": "ide", "image": lifeguard_e2e::BUSYBOX_IMAGE}]}
        }))?;
        let started = Instant::now();
        pods.create(&PostParams::default(), &pod).await?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}

async fn clean(pods: &Api<Pod>) -> anyhow::Result<()> {
    for pod in pods.list(&ListParams::default()).await? {
        let name = pod.metadata.name.unwrap_or_default();
        pods.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;
        pods.delete(&name, &DeleteParams::default().grace_period(0))
            .await?;
    }
    Ok(())
}

/// Removes a webhook configuration and gives back a copy to restore it with.
async fn take<K>(api: &Api<K>, name: &str) -> anyhow::Result<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let mut saved = api
        .get(name)
        .await
        .with_context(|| format!("{name} is not registered: run ./local-up"))?;
    api.delete(name, &DeleteParams::default()).await?;
    let meta = saved.meta_mut();
    meta.resource_version = None;
    meta.uid = None;
    meta.creation_timestamp = None;
    meta.managed_fields = None;
    Ok(saved)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let per_round: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(4);
    let client: Client = lifeguard_e2e::client().await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(NAMESPACE).await?.is_none() {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
        namespaces.create(&PostParams::default(), &ns).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    clean(&pods).await?;
    // Warm up connections and caches on both paths before measuring.
    create_batch(&pods, "warmup", 20).await?;
    clean(&pods).await?;

    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        with.extend(create_batch(&pods, &format!("with-{round}"), per_round).await?);
        clean(&pods).await?;
        let saved_validating = take(&validating, "lifeguard-validate").await?;
        let saved_mutating = take(&mutating, "lifeguard-mutate").await?;
        // The API server picks up webhook configuration changes from its own informer.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let measured = create_batch(&pods, &format!("without-{round}"), per_round).await;
        validating
            .create(&PostParams::default(), &saved_validating)
            .await?;
        mutating
            .create(&PostParams::default(), &saved_mutating)
            .await?;
        without.extend(measured?);
        clean(&pods).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    with.sort();
    without.sort();
    let show = |label: &str, v: &[Duration]| {
        println!(
            "{label}: n={} p50={:.2} ms p99={:.2} ms",
            v.len(),
            percentile(v, 0.50).as_secs_f64() * 1e3,
            percentile(v, 0.99).as_secs_f64() * 1e3
        );
    };
    show("pod CREATE with webhooks   ", &with);
    show("pod CREATE without webhooks", &without);
    println!(
        "p99 ratio with/without: {:.3}   p50 ratio: {:.3}",
        percentile(&with, 0.99).as_secs_f64() / percentile(&without, 0.99).as_secs_f64(),
        percentile(&with, 0.50).as_secs_f64() / percentile(&without, 0.50).as_secs_f64()
    );
    Ok(())
}
