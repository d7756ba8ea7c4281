//! lifeguard's per-node prober: does the real thing in the background (a throwaway
//! directory on workspace storage, a throwaway pod on this node), keeps a verdict, and
//! serves it to kubelet liveness probes, Prometheus and the Node's status.

pub mod checks;
pub mod container;
pub mod disposal_standin;
pub mod error;
pub mod flags;
pub mod fleet;
pub mod metrics;
pub mod mounts;
pub mod node;
pub mod probe_pod;
pub mod report;
pub mod server;
pub mod state;
pub mod taint;
pub mod unproven;
pub mod verdict;
pub mod volume;
pub mod watchdog;

use std::sync::Arc;

use anyhow::Context as _;
use kube::Client;

use crate::checks::Cadence;
use crate::container::ContainerProbe;
use crate::flags::Config;
use crate::metrics::Metrics;
use crate::node::NodeReporter;
use crate::state::Shared;
use crate::taint::TaintPolicy;

pub async fn run(config: Config) -> anyhow::Result<()> {
    config.validate().map_err(anyhow::Error::msg)?;
    let metrics = Metrics::new().context("registering metrics")?;
    // Reads configuration only: the prober starts, and serves, while the API server is down.
    let client = Client::try_default()
        .await
        .context("configuring the Kubernetes client (KUBECONFIG or in-cluster)")?;
    let settings = serde_json::json!({
        "intervalSeconds": config.interval.as_secs_f64(),
        "retryIntervalSeconds": config.retry().as_secs_f64(),
        "volumeDeadlineSeconds": config.volume_deadline.as_secs_f64(),
        "containerDeadlineSeconds": config.container_deadline.as_secs_f64(),
        "ttlSeconds": config.ttl.as_secs_f64(),
        "probeNamespace": config.probe_namespace,
        "storageMustBeMountpoint": config.storage_must_be_mountpoint,
        "storageFsType": config.storage_fs_type,
        "taint": config.taint,
        "maxTaintedShare": config.max_tainted_share,
    });
    let (shared, published) = Shared::new(
        config.node_name.clone(),
        settings,
        metrics,
        config.failure_threshold,
    );
    let shared = Arc::new(shared);

    lifeguard_runtime::ops::spawn(config.listen, server::router(shared.clone())).await?;
    tracing::info!(listen = %config.listen, node = %config.node_name, storage = %config.storage_path.display(),
        interval = ?config.interval, taint = config.taint, "serving");

    let heartbeat = jiff::SignedDuration::try_from(config.heartbeat).context("--heartbeat")?;
    let taint = TaintPolicy {
        enabled: config.taint,
        max_share: config.max_tainted_share,
        spread: config.interval,
    };
    let reporter = NodeReporter::new(
        client.clone(),
        config.node_name.clone(),
        taint,
        heartbeat,
        config.pod_name.clone(),
        shared.clone(),
    );
    tokio::spawn(reporter.run(published));

    let schedule = Cadence {
        interval: config.interval,
        retry: config.retry(),
    };
    tokio::spawn(checks::volume_loop(
        shared.clone(),
        config.storage_path.clone(),
        config.storage_rule(),
        config.volume_deadline,
        config.ttl,
        schedule.clone(),
    ));
    if let Some(save_time) = config.disposal_standin_save_time {
        tracing::info!(
            ?save_time,
            answer_by = ?config.disposal_standin_answer,
            "playing the backup agent for pods labelled disposal-standin=true"
        );
        tokio::spawn(disposal_standin::run(
            client.clone(),
            config.node_name.clone(),
            shared.clone(),
            save_time,
            config.disposal_standin_answer,
        ));
    }
    let mut probe = ContainerProbe::new(client, &config.probe_namespace, config.node_name.clone());
    probe.image = config.probe_image.clone();
    probe.pull_policy = config.probe_image_pull_policy.clone();
    probe.deadline = config.container_deadline;
    probe.ttl = config.ttl;
    tokio::spawn(checks::container_loop(shared, probe, schedule));

    lifeguard_runtime::process::shutdown_signal().await;
    Ok(())
}
