//! Prometheus metrics of the controller, on their own registry.

use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub reconciles: IntCounterVec,
    pub rejections: IntCounterVec,
    pub rejections_after_running: IntCounterVec,
    pub recreations: IntCounterVec,
    pub give_ups: IntCounterVec,
    pub finalizer_removals: IntCounterVec,
    pub finalizer_conflicts: IntCounterVec,
    pub sweep_releases: IntCounterVec,
    /// Workspace pods deleting with our finalizer, as of the last sweep.
    pub stopping_pods: IntGauge,
    /// How long the longest-stopping of them has been deleting, in seconds.
    pub stopping_pod_oldest: IntGauge,
    pub workspaces: IntGaugeVec,
    pub leader: IntGauge,
    pub drain_remaining: IntGaugeVec,
    /// Stops a draining window has in flight (asked, pod not yet gone), by window: what
    /// `maxConcurrentDrains` bounds.
    pub drain_in_flight: IntGaugeVec,
    /// Covered workspaces whose owner postponed their stop, by window (`spec.maxPostpone`).
    pub drain_postponed: IntGaugeVec,
    pub would_drain: IntGaugeVec,
    /// 1 while a gate holds a window's drain, by window and gate (`window/hold_decision.rs`).
    pub drain_held: IntGaugeVec,
    pub drain_hold_expiries: IntCounterVec,
    pub workspaces_notified: IntGaugeVec,
    pub notices: IntCounterVec,
    pub disposals_unconfirmed: IntCounterVec,
    pub disposal_receipts_ignored: IntCounter,
    pub workspace_starts: HistogramVec,
    pub start_failures: IntCounterVec,
    pub pods_force_deleted: IntCounterVec,
    /// Looks at an evicted pod's stop that an eviction budget held back, by budget.
    pub eviction_stops_held: IntCounterVec,
    /// Evicted workspaces told of their stop.
    pub eviction_notices: IntCounterVec,
    /// Workspace pods created whose tolerations let them onto nodes lifeguard tainted, by
    /// taint key (`podspec::tolerated_lifeguard_taints`).
    pub taints_tolerated: IntCounterVec,
    /// How long each window's survey of the Workspaces took, by where it was taken from
    /// (`window::pacing`, `window::survey_index`).
    pub window_surveys: prometheus::HistogramVec,
}

fn counter(name: &str, help: &str, labels: &[&str]) -> Result<IntCounterVec, prometheus::Error> {
    IntCounterVec::new(Opts::new(name, help), labels)
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let m = Self {
            registry: Registry::new(),
            reconciles: counter(
                "lifeguard_controller_reconciles_total",
                "Workspace reconciles, by action taken or error reason.",
                &["result"],
            )?,
            // `reason` is a catalogue or configured entry (`OutOf*` for extended resources)
            // or "other": bounded whatever reasons kubelets invent.
            rejections: counter(
                "lifeguard_controller_pod_rejections_total",
                "Workspace pods the kubelet refused before they ran, by reason and class (transient: re-created; permanent: workspace Failed).",
                &["reason", "class"],
            )?,
            rejections_after_running: counter(
                "lifeguard_controller_rejections_after_running_total",
                "Workspace pods the kubelet refused after they had run (not re-created), by reason.",
                &["reason"],
            )?,
            recreations: counter(
                "lifeguard_controller_recreations_total",
                "Replacement pods created, by attempt number.",
                &["attempt"],
            )?,
            give_ups: counter(
                "lifeguard_controller_give_ups_total",
                "Workspaces marked Failed after using up their re-creations.",
                &["reason"],
            )?,
            finalizer_removals: counter(
                "lifeguard_controller_finalizer_removals_total",
                "Finalizers removed, by object kind.",
                &["kind"],
            )?,
            finalizer_conflicts: counter(
                "lifeguard_controller_finalizer_conflicts_total",
                "409 conflicts met while removing a finalizer, by object kind.",
                &["kind"],
            )?,
            sweep_releases: counter(
                "lifeguard_controller_sweep_releases_total",
                "Pods released by the sweep, by cause.",
                &["cause"],
            )?,
            workspaces: IntGaugeVec::new(
                Opts::new("lifeguard_controller_workspaces", "Workspaces by phase."),
                &["phase"],
            )?,
            drain_remaining: IntGaugeVec::new(
                Opts::new(
                    "lifeguard_controller_drain_remaining",
                    "Workspaces a draining window still waits for, by window.",
                ),
                &["window"],
            )?,
            drain_in_flight: IntGaugeVec::new(
                Opts::new(
                    "lifeguard_controller_drain_in_flight",
                    "Workspaces a draining window is stopping now (asked to stop, pod not yet gone), by window.",
                ),
                &["window"],
            )?,
            drain_postponed: IntGaugeVec::new(
                Opts::new(
                    "lifeguard_controller_drain_postponed",
                    "Covered workspaces a draining window has not stopped yet because their owner postponed the stop (within spec.maxPostpone), by window.",
                ),
                &["window"],
            )?,
            would_drain: IntGaugeVec::new(
                Opts::new(
                    "lifeguard_controller_would_drain",
                    "While a Warn or DryRun window with drain is active: covered running workspaces an Enforce window would be stopping, by window.",
                ),
                &["window"],
            )?,
            drain_held: IntGaugeVec::new(
                Opts::new(
                    "lifeguard_controller_drain_held",
                    "1 while a gate (spec.holdWhile) holds a window's drain, by window and gate (prometheus, pods).",
                ),
                &["window", "gate"],
            )?,
            drain_hold_expiries: counter(
                "lifeguard_controller_drain_hold_expiries_total",
                "Drain holds that lasted spec.maxHold, after which the drain proceeded anyway, by window and gate.",
                &["window", "gate"],
            )?,
            workspaces_notified: IntGaugeVec::new(
                Opts::new(
                    "lifeguard_controller_workspaces_notified",
                    "Workspaces that carry a window's notice of its coming drain, by window (from the notice until the occurrence is over).",
                ),
                &["window"],
            )?,
            notices: counter(
                "lifeguard_controller_maintenance_notices_total",
                "Notices of a coming drain given to workspaces, by window.",
                &["window"],
            )?,
            disposal_receipts_ignored: IntCounter::new(
                "lifeguard_controller_disposal_receipts_ignored_total",
                "Looks at a DisposalReceipt that was not the waiting pod's (another pod's UID or name, or not owned by the pod): ignored, the pod waits on.",
            )?,
            disposals_unconfirmed: counter(
                "lifeguard_controller_disposals_unconfirmed_total",
                "Workspace pods released without their backup agent confirming the work was saved (the work may be lost), by reason: timed_out or agent_failed.",
                &["reason"],
            )?,
            // From a few seconds (image present) to the default start deadline's order
            // (a slow image pull), so both SLO alerts have buckets near their thresholds.
            workspace_starts: HistogramVec::new(
                HistogramOpts::new(
                    "lifeguard_controller_workspace_start_seconds",
                    "Workspace starts, from the Workspace's creation (or its replacement pod's) to Running (outcome started) or Failed before it ran (outcome failed).",
                )
                .buckets(vec![
                    1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0,
                ]),
                &["outcome"],
            )?,
            // `blocker` is a `start_blocker::BlockerKind` or PodStarting: a fixed set.
            start_failures: counter(
                "lifeguard_controller_start_failures_total",
                "Workspace pods given up on before they were Ready, by blocker and class (permanent: failed at once; wait: failed at the start deadline; recreate: re-created on another node at the deadline).",
                &["blocker", "class"],
            )?,
            pods_force_deleted: counter(
                "lifeguard_controller_pods_force_deleted_total",
                "Released workspace pods deleted without grace because they stayed Terminating past their grace period plus --stuck-terminating-after with no container running.",
                &[],
            )?,
            // `budget` is node or cluster.
            eviction_stops_held: counter(
                "lifeguard_controller_eviction_stops_held_total",
                "Looks (one every 2 s per waiting workspace) at an evicted workspace pod's stop that an eviction budget held back, by budget: node (--eviction-max-per-node) or cluster (--eviction-max-concurrent). The eviction keeps being answered 429 meanwhile.",
                &["budget"],
            )?,
            eviction_notices: counter(
                "lifeguard_controller_eviction_notices_total",
                "Evicted workspaces told of their stop (pod annotation lifeguard.dev/eviction-notice, Event EvictionNotice, an evictionStop notification).",
                &[],
            )?,
            // `taint` is one of lifeguard's two taint keys: a fixed set.
            taints_tolerated: counter(
                "lifeguard_controller_workspace_pods_tolerating_taints_total",
                "Workspace pods created whose template tolerates a taint lifeguard puts on nodes it does not trust (lifeguard.dev/unhealthy, lifeguard.dev/unproven), by taint: they may be scheduled there.",
                &["taint"],
            )?,
            // From a page of a few workspaces (milliseconds) to 10,000 on a busy API server.
            window_surveys: prometheus::HistogramVec::new(
                HistogramOpts::new(
                    "lifeguard_controller_window_survey_seconds",
                    "Surveys of the Workspaces by an active window, by source: watch (the controller's own watch, for a drain's progress) or list (every Workspace listed, 200 a page: before the watch is in, for a node-scoped or resuming window, and to confirm Drained). A window surveys again after four times the last survey's duration, at least a second, or at once when its drain's last stop ends.",
                )
                .buckets(vec![0.001, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0]),
                &["source"],
            )?,
            stopping_pods: IntGauge::new(
                "lifeguard_controller_stopping_pods",
                "Workspace pods being deleted that still hold the disposal finalizer, as of the last sweep (--sweep-interval).",
            )?,
            stopping_pod_oldest: IntGauge::new(
                "lifeguard_controller_stopping_pod_oldest_seconds",
                "How long ago the delete of the longest-stopping workspace pod that still holds the disposal finalizer was asked (deletionTimestamp less its grace period), as of the last sweep (0 for none).",
            )?,
            leader: IntGauge::new(
                "lifeguard_controller_leader",
                "1 while this replica holds the leader Lease and reconciles.",
            )?,
        };
        for c in [
            &m.reconciles,
            &m.rejections,
            &m.rejections_after_running,
            &m.recreations,
            &m.give_ups,
            &m.finalizer_removals,
            &m.finalizer_conflicts,
            &m.sweep_releases,
            &m.notices,
            &m.disposals_unconfirmed,
            &m.start_failures,
            &m.pods_force_deleted,
            &m.eviction_stops_held,
            &m.eviction_notices,
            &m.taints_tolerated,
        ] {
            m.registry.register(Box::new(c.clone()))?;
        }
        m.registry.register(Box::new(m.workspaces.clone()))?;
        m.registry.register(Box::new(m.leader.clone()))?;
        m.registry.register(Box::new(m.window_surveys.clone()))?;
        m.registry.register(Box::new(m.stopping_pods.clone()))?;
        m.registry
            .register(Box::new(m.stopping_pod_oldest.clone()))?;
        m.registry
            .register(Box::new(m.disposal_receipts_ignored.clone()))?;
        m.registry.register(Box::new(m.workspace_starts.clone()))?;
        m.registry.register(Box::new(m.drain_remaining.clone()))?;
        m.registry.register(Box::new(m.drain_in_flight.clone()))?;
        m.registry.register(Box::new(m.drain_postponed.clone()))?;
        m.registry.register(Box::new(m.would_drain.clone()))?;
        m.registry.register(Box::new(m.drain_held.clone()))?;
        m.registry
            .register(Box::new(m.drain_hold_expiries.clone()))?;
        m.registry
            .register(Box::new(m.workspaces_notified.clone()))?;
        Ok(m)
    }

    pub fn render(&self) -> String {
        lifeguard_runtime::ops::render(&self.registry)
    }

    /// For the ops router's `/metrics`.
    pub fn registry(&self) -> Registry {
        self.registry.clone()
    }
}
