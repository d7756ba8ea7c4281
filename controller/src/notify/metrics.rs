//! The notifier's metrics, registered on the controller's registry beside the others.

use prometheus::{IntCounterVec, IntGauge, Opts, Registry};

use super::document::Kind;

#[derive(Clone)]
pub struct NotifyMetrics {
    pub sent: IntCounterVec,
    pub failures: IntCounterVec,
    pub dropped: IntCounterVec,
    pub queue_depth: IntGauge,
}

impl NotifyMetrics {
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let m = Self {
            sent: IntCounterVec::new(
                Opts::new(
                    "lifeguard_controller_notifications_sent_total",
                    "Notifications the receiver accepted (2xx), by kind.",
                ),
                &["kind"],
            )?,
            failures: IntCounterVec::new(
                Opts::new(
                    "lifeguard_controller_notification_failures_total",
                    "Notification attempts that failed, by reason (connect, tls, timeout, http_5xx, http_busy, http_4xx, http_redirect, token, protocol).",
                ),
                &["reason"],
            )?,
            dropped: IntCounterVec::new(
                Opts::new(
                    "lifeguard_controller_notifications_dropped_total",
                    "Notifications given up on, by reason (queue_full: the queue was full when it was due; expired: not delivered within --notify-give-up-after; rejected: the receiver refused it with a 4xx).",
                ),
                &["reason"],
            )?,
            queue_depth: IntGauge::new(
                "lifeguard_controller_notification_queue_depth",
                "Notifications waiting to be sent (the one being tried included).",
            )?,
        };
        registry.register(Box::new(m.sent.clone()))?;
        registry.register(Box::new(m.failures.clone()))?;
        registry.register(Box::new(m.dropped.clone()))?;
        registry.register(Box::new(m.queue_depth.clone()))?;
        // Every series from the start, so a rate() sees the first increase.
        for kind in Kind::ALL {
            m.sent.with_label_values(&[kind.as_str()]);
        }
        for reason in ["queue_full", "expired", "rejected"] {
            m.dropped.with_label_values(&[reason]);
        }
        Ok(m)
    }
}
