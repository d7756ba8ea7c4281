//! Prometheus metrics of the prober, on their own registry.

use prometheus::{
    GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

use crate::verdict::{Check, Outcome, Verdict};

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub checks: IntCounterVec,
    pub durations: HistogramVec,
    pub last_success: GaugeVec,
    pub consecutive_failures: IntGaugeVec,
    pub verdict: IntGaugeVec,
    pub reaped: IntCounterVec,
    pub liveness: IntCounterVec,
    pub taint_held_back: IntGauge,
    /// 1 while the node carries lifeguard's unproven taint (`unproven`).
    pub unproven: IntGauge,
    /// 1 once the fleet guard released the unproven taint of an unhealthy node.
    pub unproven_released: IntGauge,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let checks = IntCounterVec::new(
            Opts::new(
                "lifeguard_prober_checks_total",
                "Check runs, by check (volume, container) and outcome (success, failure, unknown).",
            ),
            &["check", "outcome"],
        )?;
        let durations = HistogramVec::new(
            HistogramOpts::new(
                "lifeguard_prober_check_duration_seconds",
                "Time a check run took (a hung run counts as its deadline).",
            )
            .buckets(vec![
                0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
            ]),
            &["check"],
        )?;
        let last_success = GaugeVec::new(
            Opts::new(
                "lifeguard_prober_last_success_timestamp_seconds",
                "Unix time of the last successful run, by check.",
            ),
            &["check"],
        )?;
        let consecutive_failures = IntGaugeVec::new(
            Opts::new(
                "lifeguard_prober_consecutive_failures",
                "Failures in a row (inconclusive runs neither count nor reset), by check.",
            ),
            &["check"],
        )?;
        let verdict = IntGaugeVec::new(
            Opts::new(
                "lifeguard_prober_verdict",
                "1 for the current verdict (healthy, unhealthy, unknown), 0 for the others.",
            ),
            &["verdict"],
        )?;
        let reaped = IntCounterVec::new(
            Opts::new(
                "lifeguard_prober_leftovers_reaped_total",
                "Expired throwaway objects the janitor removed, by kind (directory, pod).",
            ),
            &["kind"],
        )?;
        let liveness = IntCounterVec::new(
            Opts::new(
                "lifeguard_prober_liveness_responses_total",
                "Answers of the liveness endpoint, by HTTP status code.",
            ),
            &["code"],
        )?;
        let taint_held_back = IntGauge::new(
            "lifeguard_prober_taint_held_back",
            "1 while the node is unhealthy but its taint is held back because more than \
             --max-tainted-share of the nodes already carry it.",
        )?;
        registry.register(Box::new(taint_held_back.clone()))?;
        let unproven = IntGauge::new(
            "lifeguard_prober_node_unproven",
            "1 while the node carries the lifeguard.dev/unproven taint: it registered with it              and no healthy verdict has removed it yet.",
        )?;
        let unproven_released = IntGauge::new(
            "lifeguard_prober_unproven_released_by_fleet_guard",
            "1 once the unproven taint of this unhealthy node was removed because more than              --max-tainted-share of the nodes were still unproven.",
        )?;
        registry.register(Box::new(unproven.clone()))?;
        registry.register(Box::new(unproven_released.clone()))?;
        for c in [&checks, &reaped, &liveness] {
            registry.register(Box::new(c.clone()))?;
        }
        registry.register(Box::new(durations.clone()))?;
        registry.register(Box::new(last_success.clone()))?;
        registry.register(Box::new(consecutive_failures.clone()))?;
        registry.register(Box::new(verdict.clone()))?;
        let metrics = Self {
            registry,
            checks,
            durations,
            last_success,
            consecutive_failures,
            verdict,
            reaped,
            liveness,
            taint_held_back,
            unproven,
            unproven_released,
        };
        // Every series exists from the start, so rates and alerts need no absent() dance.
        for check in Check::ALL {
            for outcome in ["success", "failure", "unknown"] {
                metrics.checks.with_label_values(&[check.as_str(), outcome]);
            }
            metrics
                .consecutive_failures
                .with_label_values(&[check.as_str()]);
        }
        for kind in ["directory", "pod"] {
            metrics.reaped.with_label_values(&[kind]);
        }
        for code in ["200", "503"] {
            metrics.liveness.with_label_values(&[code]);
        }
        metrics.set_verdict(Verdict::Unknown);
        Ok(metrics)
    }

    pub fn set_verdict(&self, now: Verdict) {
        for v in Verdict::ALL {
            self.verdict
                .with_label_values(&[v.as_str()])
                .set(i64::from(v == now));
        }
    }

    pub fn observe(&self, check: Check, outcome: &Outcome, seconds: f64) {
        self.checks
            .with_label_values(&[check.as_str(), outcome.label()])
            .inc();
        self.durations
            .with_label_values(&[check.as_str()])
            .observe(seconds);
    }

    pub fn render(&self) -> String {
        lifeguard_runtime::ops::render(&self.registry)
    }

    /// For the ops router's `/metrics`.
    pub fn registry(&self) -> Registry {
        self.registry.clone()
    }
}
