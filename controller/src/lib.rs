//! lifeguard's controller: keeps one pod per Workspace, recovers pods the kubelet rejected
//! after scheduling, and releases the disposal finalizer only once a pod's end is recorded.

pub mod backoff;
pub mod config;
pub mod disposal;
pub mod drain;
pub mod finalizers;
pub mod leader;
pub mod memory;
pub mod metrics;
pub mod node_loss;
pub mod nodes;
pub mod notice;
pub mod plan;
pub mod podspec;
pub mod reconcile;
pub mod rejection;
pub mod status;
pub mod sweep;
pub mod window_watch;
pub mod windows;

#[cfg(test)]
mod plan_create_tests;
#[cfg(test)]
mod plan_owner_tests;
#[cfg(test)]
mod plan_tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Config as ControllerConfig;
use kube::runtime::events::Reporter;
use kube::runtime::reflector;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client};
use lifeguard_api::names::WORKSPACE_LABEL;
use lifeguard_api::{MaintenanceWindow, Workspace, WorkspacePhase};

use crate::config::Config;
use crate::metrics::Metrics;
use crate::reconcile::{Context, error_policy, reconcile};

pub use lifeguard_api::process::init_tracing;

#[derive(Clone)]
struct Ops {
    metrics: Metrics,
    ready: Arc<AtomicBool>,
}

fn ops_router(ops: Ops) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(ops): State<Ops>| async move {
                if ops.ready.load(Ordering::Acquire) {
                    (StatusCode::OK, "ready")
                } else {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "initial sweep not finished",
                    )
                }
            }),
        )
        .route(
            "/metrics",
            get(|State(ops): State<Ops>| async move { ops.metrics.render() }),
        )
        .with_state(ops)
}

/// Keeps the workspaces-by-phase gauge current, listing in pages so that the count costs
/// no lasting memory.
async fn count_phases(client: Client, metrics: Metrics) {
    let api: Api<Workspace> = Api::all(client);
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        tick.tick().await;
        let mut counts = std::collections::BTreeMap::new();
        // Small pages: each holds full Workspaces (pod templates and all) while it is counted.
        let mut params = kube::api::ListParams::default().limit(100);
        loop {
            let page = match api.list(&params).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::debug!(%error, "counting workspaces failed");
                    break;
                }
            };
            for ws in &page.items {
                if let Some(phase) = ws.status.as_ref().and_then(|s| s.phase) {
                    *counts.entry(phase.as_str()).or_insert(0i64) += 1;
                }
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => {
                    for phase in WorkspacePhase::ALL {
                        let n = counts.get(phase.as_str()).copied().unwrap_or(0);
                        metrics
                            .workspaces
                            .with_label_values(&[phase.as_str()])
                            .set(n);
                    }
                    memory::release_free_heap();
                    break;
                }
            }
        }
    }
}

pub async fn run(config: Config) -> anyhow::Result<()> {
    let client = Client::try_default()
        .await
        .context("connecting to the Kubernetes API (KUBECONFIG or in-cluster)")?;
    let metrics = Metrics::new().context("registering metrics")?;
    let settings = config.settings().context("invalid flags")?;
    let ops = Ops {
        metrics: metrics.clone(),
        ready: Arc::new(AtomicBool::new(false)),
    };
    let listener = tokio::net::TcpListener::bind(config.metrics_listen)
        .await
        .with_context(|| format!("binding {}", config.metrics_listen))?;
    let app = ops_router(ops.clone());
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "health and metrics server stopped");
        }
    });
    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        lifeguard_api::process::shutdown_signal().await;
        let _ = stop.send(true);
    });
    let stopped = move || {
        let mut stopping = stopping.clone();
        async move {
            let _ = stopping.wait_for(|s| *s).await;
        }
    };

    let identity = leader::identity(config.identity.clone());
    let mut leadership = leader::Leadership::start(
        client.clone(),
        &config.lease_namespace,
        &config.lease_name,
        &identity,
        config.lease_seconds,
    )
    .await?;
    // A standby is healthy and ready: it has nothing to serve until it leads.
    ops.ready.store(true, Ordering::Release);
    tracing::info!(%identity, lease = %config.lease_name, "waiting to lead");
    tokio::select! {
        acquired = leadership.acquired() => acquired?,
        () = stopped() => {
            leadership.release().await;
            return Ok(());
        }
    }
    metrics.leader.set(1);
    tracing::info!(%identity, "leading");

    // Pods left Terminating while no controller ran are released before anything else.
    match sweep::sweep_once(&client, &settings, &metrics).await {
        Ok(released) => tracing::info!(released, "initial sweep done"),
        Err(error) => tracing::warn!(%error, "initial sweep failed; the periodic sweep retries"),
    }
    let sweep_every = Duration::try_from(config.sweep_interval).unwrap_or(Duration::from_secs(60));
    let sweeper = tokio::spawn(sweep::run(
        client.clone(),
        settings.clone(),
        metrics.clone(),
        sweep_every.max(Duration::from_secs(1)),
    ));

    let reporter = Reporter {
        controller: "lifeguard-controller".into(),
        instance: Some(identity),
    };
    let (nodes, node_triggers) = nodes::watch(client.clone());
    let nodes_ready = Arc::new(AtomicBool::new(false));
    {
        // Until the first list is in, an absent node means "not seen yet", not "removed":
        // node_loss stays silent until then.
        let (nodes, nodes_ready) = (nodes.clone(), nodes_ready.clone());
        tokio::spawn(async move {
            if nodes.wait_until_ready().await.is_ok() {
                nodes_ready.store(true, Ordering::Release);
            }
        });
    }
    let (windows, window_changes) = window_watch::watch(client.clone());
    let context = Arc::new(Context {
        client: client.clone(),
        windows,
        settings,
        reporter,
        metrics: metrics.clone(),
        nodes,
        nodes_ready,
    });
    // Only the identity of each Workspace is cached: the reconciler reads it fresh, and
    // managedFields alone would be most of a cached object's memory.
    let (store, writer) = reflector::store();
    let workspace_events = watcher(
        Api::<PartialObjectMeta<Workspace>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(|ws| {
        // The reconciler reads each Workspace fresh; the cache only has to name it. Even
        // uid and resourceVersion go: they would be copied into every cache key too.
        let meta = std::mem::take(&mut ws.metadata);
        ws.types = None;
        ws.metadata.name = meta.name;
        ws.metadata.namespace = meta.namespace;
    })
    .reflect(writer)
    .touched_objects();
    // Bounded concurrency: unbounded, a cold start with thousands of Workspaces keeps
    // thousands of requests and their buffers in flight at once. Pods are watched as
    // metadata only: the owner reference is all the trigger needs.
    let controller = Controller::for_stream(workspace_events, store)
        .owns(
            Api::<PartialObjectMeta<Pod>>::all(client.clone()),
            watcher::Config::default().labels(WORKSPACE_LABEL),
        )
        .reconcile_on(node_triggers)
        .reconcile_all_on(window_changes)
        .with_config(ControllerConfig::default().concurrency(config.concurrency));
    let counter = tokio::spawn(count_phases(client.clone(), metrics.clone()));
    let workspaces = controller
        .graceful_shutdown_on(stopped())
        .run(reconcile, error_policy, context.clone())
        .for_each(|_| futures::future::ready(()));
    // Deletions trigger too (`touched_objects`): a deleted window is then reported as
    // missing at once, and its drain gauge series dropped.
    let (window_store, window_writer) = reflector::store();
    let window_events = watcher(
        Api::<MaintenanceWindow>::all(context.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(window_writer)
    .touched_objects();
    let window_metrics = metrics.clone();
    let windows = Controller::for_stream(window_events, window_store)
        .graceful_shutdown_on(stopped())
        .run(
            windows::reconcile_window,
            windows::window_error_policy,
            context,
        )
        .for_each(move |result| {
            windows::forget_deleted(&window_metrics, &result);
            futures::future::ready(())
        });
    let reconciling = futures::future::join(workspaces, windows).map(|_| ());
    let outcome = tokio::select! {
        () = reconciling => Ok(()),
        () = leadership.lost() => Err(anyhow::anyhow!(
            "lost the leader Lease; exiting so that a fresh start rejoins the election"
        )),
    };
    sweeper.abort();
    counter.abort();
    metrics.leader.set(0);
    leadership.release().await;
    tracing::info!("stopped");
    outcome
}
