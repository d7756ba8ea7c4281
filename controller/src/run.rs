//! Start-up and wiring: ops endpoints, leader election, the sweep, the watches and the two
//! reconcilers, and shutdown.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use futures::{FutureExt, StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Config as ControllerConfig;
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use lifeguard_api::receipt::DisposalReceipt;
use lifeguard_api::{MaintenanceWindow, Workspace, WorkspacePhase};
use lifeguard_runtime::background_events::BackgroundEvents;
use lifeguard_runtime::ops::{Readiness, always_live};

use crate::flags::Config;
use crate::metrics::Metrics;
use crate::phase_tally::{PhaseTally, WorkspaceKey};
use crate::watched_workspace::WatchedWorkspace;
use crate::workspace::reconcile::{error_policy, reconcile};
use crate::workspace::trigger;
use crate::{
    Context, leader, mount_events, namespaces, nodes, pod_names, sweep, window, window_watch,
};

/// A standby is ready too (it has nothing to serve until it leads); a replica is not ready
/// only between start and joining the election.
fn ops_router(metrics: &Metrics, ready: Arc<AtomicBool>) -> Router {
    let readiness: Readiness = Arc::new(move || {
        if ready.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err("not in the leader election yet".into())
        }
    });
    lifeguard_runtime::ops::router(always_live(), readiness, metrics.registry())
}

/// Events being published at once. Their reconciles do not wait for them; a burst beyond
/// this many waits for a slot, so a flood of Events cannot pile up tasks and memory. 32 is
/// twice the default `--concurrency`, each start's create reconcile publishing one.
const EVENTS_IN_FLIGHT: u32 = 32;

/// How long a stopping leader waits for the Events it started to be published.
const EVENTS_FLUSH: Duration = Duration::from_secs(5);

/// How often the workspaces-by-phase gauge is published from the tally.
const PUBLISH_PHASES: Duration = Duration::from_secs(10);

/// Publishes the workspaces-by-phase gauge from the reconciler's tally (`phase_tally`),
/// dropping Workspaces no longer in the controller's cache: no API call.
async fn publish_phases(
    store: reflector::Store<PartialObjectMeta<Workspace>>,
    context: Arc<Context>,
) {
    let mut tick = tokio::time::interval(PUBLISH_PHASES);
    loop {
        tick.tick().await;
        let present: HashSet<WorkspaceKey> = store
            .state()
            .iter()
            .filter_map(|ws| {
                Some(WorkspaceKey::new(
                    ws.metadata.namespace.as_deref()?,
                    ws.metadata.name.as_deref()?,
                ))
            })
            .collect();
        let counts = context.phases.retain_and_count(&present);
        for (phase, n) in WorkspacePhase::ALL.iter().zip(counts) {
            context
                .metrics
                .workspaces
                .with_label_values(&[phase.as_str()])
                .set(n);
        }
    }
}

/// Workspaces a page of the watch's (re)list: each page is decoded whole, managed fields
/// included, before its events are handed on. At kube's default of 500 a
/// controller taking over among 10,000 workspaces peaked 7.5 MiB higher than one that saw
/// them created (docs/benchmarks.md); the extra requests are a few dozen once a list.
const WORKSPACE_LIST_PAGE: u32 = 100;

/// A watch event of a Workspace as one of its identity: the reconciler reads each
/// Workspace fresh, so the cache only has to name it. Even uid and resourceVersion go:
/// they would be copied into every cache key too. `generation` carries the fingerprint of
/// what the reconciler acts on (`trigger`).
fn identity_event(
    event: watcher::Event<WatchedWorkspace>,
) -> watcher::Event<PartialObjectMeta<Workspace>> {
    let identity = |ws: WatchedWorkspace| {
        let meta = ws.metadata;
        // No `types` either (`into_response_partial` would add two strings to each).
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                generation: Some(trigger::fingerprint(&meta)),
                name: meta.name,
                namespace: meta.namespace,
                ..ObjectMeta::default()
            },
            _phantom: std::marker::PhantomData,
        }
    };
    match event {
        watcher::Event::Apply(ws) => watcher::Event::Apply(identity(ws)),
        watcher::Event::Delete(ws) => watcher::Event::Delete(identity(ws)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(ws) => watcher::Event::InitApply(identity(ws)),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// The Workspaces in each set of namespaces `signals` names, from the controller's own
/// cache (names only), so a signal costs no API call.
fn in_namespaces(
    cache: reflector::Store<PartialObjectMeta<Workspace>>,
    signals: impl futures::Stream<Item = BTreeSet<String>> + Send + 'static,
) -> impl futures::Stream<Item = ObjectRef<PartialObjectMeta<Workspace>>> + Send + 'static {
    signals.flat_map(move |namespaces| {
        let refs: Vec<_> = cache
            .state()
            .iter()
            .filter(|ws| ws.namespace().is_some_and(|ns| namespaces.contains(&ns)))
            .map(|ws| ObjectRef::from_obj(ws.as_ref()))
            .collect();
        futures::stream::iter(refs)
    })
}

/// On a clean stop the reconcilers are done and every notifier with them, so the delivery
/// task ends once the queue is empty: it gets a few seconds for that. A replica that lost
/// the Lease sends nothing more (another one leads).
async fn flush_notifications(mut task: tokio::task::JoinHandle<()>, clean: bool) {
    const FLUSH: Duration = Duration::from_secs(5);
    if clean && tokio::time::timeout(FLUSH, &mut task).await.is_ok() {
        return;
    }
    task.abort();
    tracing::info!("notifications still queued at exit are not sent");
}

pub async fn run(config: Config) -> anyhow::Result<()> {
    let client = Client::try_default()
        .await
        .context("connecting to the Kubernetes API (KUBECONFIG or in-cluster)")?;
    let metrics = Metrics::new().context("registering metrics")?;
    let settings = config.settings().context("invalid flags")?;
    let prometheus = config
        .prometheus_url
        .as_deref()
        .map(window::prometheus::Prometheus::parse)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--prometheus-url")?;
    let notify_settings = config
        .notify_settings()
        .map_err(anyhow::Error::msg)
        .context("invalid notification flags")?;
    let notify_metrics = crate::notify::metrics::NotifyMetrics::register(&metrics.registry())
        .context("registering notification metrics")?;
    let ready = Arc::new(AtomicBool::new(false));
    lifeguard_runtime::ops::spawn(config.metrics_listen, ops_router(&metrics, ready.clone()))
        .await?;
    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        lifeguard_runtime::process::shutdown_signal().await;
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
    ready.store(true, Ordering::Release);
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

    let reporter = Reporter {
        controller: crate::FIELD_MANAGER.into(),
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
    let (pods, pod_events) = pod_names::watch(client.clone());
    let (mount_events, mount_triggers) = mount_events::watch(client.clone(), pods.clone());
    let (namespaces, namespace_changes) = namespaces::watch(client.clone());
    let (windows, notice_signals) = window_watch::watch(client.clone(), namespaces.clone());
    // Only the leader sends: the delivery task starts here, after the Lease is won, and
    // ends with this process (a standby never sends).
    let (notify, notify_task) = match &notify_settings {
        Some(settings) => {
            let events = crate::notify::sink::Events {
                client: client.clone(),
                reporter: reporter.clone(),
            };
            let (notifier, task) =
                crate::notify::sink::start(settings, notify_metrics, Some(events))
                    .map_err(anyhow::Error::msg)
                    .context("--notify-url")?;
            (notifier, Some(task))
        }
        None => (crate::notify::Notifier::disabled(), None),
    };
    // Bounded: a full queue only means the window already has a wake-up pending (and
    // its poll remains).
    let (stop_ended, stops_ended) = tokio::sync::mpsc::channel(1024);
    let survey_index = window::survey_index::SurveyIndex::default();
    let context = Arc::new(Context {
        client: client.clone(),
        windows,
        namespaces,
        settings,
        events: BackgroundEvents::new(client.clone(), reporter, EVENTS_IN_FLIGHT),
        metrics: metrics.clone(),
        nodes,
        pods,
        mount_events,
        nodes_ready,
        stop_ended,
        prometheus,
        notify,
        phases: PhaseTally::default(),
        surveys: window::pacing::SurveyPacer::default(),
        survey_index: survey_index.clone(),
        eviction_gate: tokio::sync::Mutex::default(),
    });
    // Only the identity of each Workspace is cached for the reconciler, which reads it
    // fresh: managedFields alone would be most of a cached object's memory. The watch
    // receives whole objects either way (a watch of `PartialObjectMeta` is decoded from
    // them), so the windows' survey index takes the few fields it reads on the way. Their
    // spec is not decoded at all (`watched_workspace`).
    let (store, writer) = reflector::store();
    let workspace_events = watcher(
        Api::<WatchedWorkspace>::all(client.clone()),
        watcher::Config::default().page_size(WORKSPACE_LIST_PAGE),
    )
    .default_backoff()
    .map_ok(move |event| {
        survey_index.apply(&event);
        identity_event(event)
    })
    .reflect(writer)
    .touched_objects()
    // Only changes the reconciler acts on: the status is its own, and a pass that writes
    // it plans again with what the write returned (`workspace::reconcile`).
    .predicate_filter(
        trigger::fingerprint_in_generation,
        kube::runtime::PredicateConfig::default(),
    );
    // Bounded concurrency: unbounded, a cold start with thousands of Workspaces keeps
    // thousands of requests and their buffers in flight at once. Pods are watched as
    // metadata only: the owner reference is all the trigger needs, and the name all the
    // cache of pod names keeps (`pod_names`).
    let events = context.events.clone();
    let store_for_signals = store.clone();
    let store_for_phases = store.clone();
    // Pods left Terminating while no controller ran are released as soon as the caches
    // are in, then every interval.
    let sweep_every = Duration::try_from(config.sweep_interval).unwrap_or(Duration::from_secs(60));
    let sweeper = tokio::spawn(sweep::run(
        context.client.clone(),
        sweep::Caches {
            pods: context.pods.clone(),
            workspaces: store.clone(),
        },
        context.settings.clone(),
        context.metrics.clone(),
        sweep_every.max(Duration::from_secs(1)),
    ));
    let controller = Controller::for_stream(workspace_events, store)
        .owns_stream(pod_events)
        // A backup agent's receipt releases its stopping pod now, not at the timeout.
        .watches(
            Api::<PartialObjectMeta<DisposalReceipt>>::all(client.clone()),
            watcher::Config::default(),
            |receipt| trigger::workspace_of_receipt(&receipt),
        )
        .reconcile_on(node_triggers)
        .reconcile_on(mount_triggers)
        .reconcile_on(in_namespaces(
            store_for_signals,
            futures::stream::select(notice_signals.namespaces, namespace_changes),
        ))
        .reconcile_all_on(notice_signals.everyone)
        .with_config(ControllerConfig::default().concurrency(config.concurrency));
    let counter = tokio::spawn(publish_phases(store_for_phases, context.clone()));
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
    let window_client = context.client.clone();
    let window_surveys = context.surveys.clone();
    let stops_ended = futures::stream::unfold(stops_ended, |mut rx| async move {
        rx.recv().await.map(|window| (window, rx))
    });
    let windows = Controller::for_stream(window_events, window_store)
        .reconcile_on(stops_ended)
        .graceful_shutdown_on(stopped())
        .run(
            window::reconcile::reconcile_window,
            window::reconcile::window_error_policy,
            context,
        )
        .for_each(move |result| {
            window::reconcile::forget_deleted(&window_metrics, &window_surveys, &result);
            window::node_signal::on_deleted(&window_client, &result);
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
    if !events.flush(EVENTS_FLUSH).await {
        tracing::warn!("stopped before every Event was published");
    }
    if let Some(task) = notify_task {
        flush_notifications(task, outcome.is_ok()).await;
    }
    metrics.leader.set(0);
    leadership.release().await;
    tracing::info!("stopped");
    outcome
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
