//! Prometheus metrics of the webhook, on their own registry.

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry};

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub admissions: IntCounterVec,
    pub latency: HistogramVec,
    pub bad_requests: IntCounterVec,
    pub cert_reloads: IntCounterVec,
    pub certificate_expiry: IntGauge,
    pub certificate_renewals: IntCounterVec,
    pub certificate_errors: IntCounterVec,
    pub cache_synced: IntGauge,
    pub windows_cached: IntGauge,
    pub windows_invalid: IntGauge,
    pub body_rejections: IntCounterVec,
    pub body_bytes_in_flight: IntGauge,
    pub connections: IntGauge,
    pub would_deny: IntCounterVec,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let admissions = IntCounterVec::new(
            Opts::new(
                "lifeguard_webhook_admissions_total",
                "Admission requests answered, by webhook, operation, kind and decision.",
            ),
            &["webhook", "operation", "kind", "decision"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "lifeguard_webhook_admission_duration_seconds",
                "Time to decide an admission request, from body received to response built.",
            )
            .buckets(vec![
                0.00002, 0.00005, 0.0001, 0.00015, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.0025,
                0.005, 0.01, 0.05,
            ]),
            &["webhook"],
        )?;
        let bad_requests = IntCounterVec::new(
            Opts::new(
                "lifeguard_webhook_bad_requests_total",
                "Requests that were not a valid AdmissionReview, by webhook.",
            ),
            &["webhook"],
        )?;
        let cert_reloads = IntCounterVec::new(
            Opts::new(
                "lifeguard_webhook_cert_reloads_total",
                "Serving-certificate reloads, by result (success, error).",
            ),
            &["result"],
        )?;
        let certificate_expiry = IntGauge::new(
            "lifeguard_webhook_certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate this replica serves, seconds since the epoch.",
        )?;
        let certificate_renewals = IntCounterVec::new(
            Opts::new(
                "lifeguard_webhook_certificate_renewals_total",
                "Managed certificates this replica issued, by kind (leaf, ca).",
            ),
            &["kind"],
        )?;
        let certificate_errors = IntCounterVec::new(
            Opts::new(
                "lifeguard_webhook_certificate_errors_total",
                "Failed steps of the certificate manager, by step (read, create, rotate-ca, \
                 publish, issue-leaf, drop-cas, clear-renew, load).",
            ),
            &["step"],
        )?;
        let cache_synced = IntGauge::new(
            "lifeguard_webhook_cache_synced",
            "1 once the MaintenanceWindow and Namespace caches have synced.",
        )?;
        let windows_cached = IntGauge::new(
            "lifeguard_webhook_windows_cached",
            "MaintenanceWindows in the cache that the webhook enforces.",
        )?;
        let windows_invalid = IntGauge::new(
            "lifeguard_webhook_windows_invalid",
            "MaintenanceWindows in the cache that cannot be enforced because their spec is invalid.",
        )?;
        let body_rejections = IntCounterVec::new(
            Opts::new(
                "lifeguard_webhook_body_rejections_total",
                "Admission bodies refused before parsing, by webhook and reason (too_large, busy: the in-flight byte budget stayed full, timed_out, read_error).",
            ),
            &["webhook", "reason"],
        )?;
        let body_bytes_in_flight = IntGauge::new(
            "lifeguard_webhook_body_bytes_in_flight",
            "Bytes of admission bodies held in memory, counted against --max-bytes-in-flight.",
        )?;
        let connections = IntGauge::new(
            "lifeguard_webhook_connections",
            "Open admission connections (TLS handshakes included), bounded by --max-connections.",
        )?;
        let would_deny = IntCounterVec::new(
            Opts::new(
                "lifeguard_webhook_would_deny_total",
                "Starts a Warn or DryRun MaintenanceWindow admitted that it would have denied as Enforce, by window.",
            ),
            &["window"],
        )?;
        registry.register(Box::new(would_deny.clone()))?;
        registry.register(Box::new(body_rejections.clone()))?;
        registry.register(Box::new(body_bytes_in_flight.clone()))?;
        registry.register(Box::new(connections.clone()))?;
        registry.register(Box::new(admissions.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(bad_requests.clone()))?;
        registry.register(Box::new(cert_reloads.clone()))?;
        registry.register(Box::new(certificate_expiry.clone()))?;
        registry.register(Box::new(certificate_renewals.clone()))?;
        registry.register(Box::new(certificate_errors.clone()))?;
        registry.register(Box::new(cache_synced.clone()))?;
        registry.register(Box::new(windows_cached.clone()))?;
        registry.register(Box::new(windows_invalid.clone()))?;
        Ok(Self {
            registry,
            admissions,
            latency,
            bad_requests,
            cert_reloads,
            certificate_expiry,
            certificate_renewals,
            certificate_errors,
            cache_synced,
            windows_cached,
            windows_invalid,
            body_rejections,
            body_bytes_in_flight,
            connections,
            would_deny,
        })
    }

    /// Drops the `would_deny` series of windows not in `present`: a deleted window's count
    /// would otherwise stay exposed for the life of the replica.
    pub fn forget_windows_except(&self, present: &std::collections::BTreeSet<String>) {
        use prometheus::core::Collector;
        let stale: Vec<String> = self
            .would_deny
            .collect()
            .iter()
            .flat_map(|family| family.get_metric())
            .flat_map(|metric| metric.get_label())
            .filter(|label| label.name() == "window" && !present.contains(label.value()))
            .map(|label| label.value().to_string())
            .collect();
        for window in stale {
            let _ = self.would_deny.remove_label_values(&[&window]);
        }
    }

    pub fn render(&self) -> String {
        lifeguard_runtime::ops::render(&self.registry)
    }

    /// For the ops router's `/metrics`.
    pub fn registry(&self) -> Registry {
        self.registry.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_window_loses_its_would_deny_series() {
        let metrics = Metrics::new().expect("metrics");
        metrics.would_deny.with_label_values(&["kept"]).inc();
        metrics.would_deny.with_label_values(&["gone"]).inc();
        metrics.forget_windows_except(&["kept".to_string()].into_iter().collect());
        let text = metrics.render();
        assert!(
            text.contains(r#"lifeguard_webhook_would_deny_total{window="kept"} 1"#),
            "{text}"
        );
        assert!(!text.contains("gone"), "{text}");
    }
}
