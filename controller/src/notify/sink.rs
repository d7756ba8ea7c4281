//! The queue and its delivery task. Reconcilers call `Notifier::send`, which never waits:
//! a full queue drops the document (counted). One task takes documents in order and posts
//! each until it is delivered, refused or too old, waiting with backoff between failures;
//! the waits are the sender's, not per document, so a receiver that is away is tried once
//! per backoff step however many documents wait.

use std::time::Instant;

use hyper::body::Bytes;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{EventType, Reporter};
use kube::runtime::reflector::ObjectRef;
use lifeguard_api::MaintenanceWindow;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::alertmanager;
use super::document::Notification;
use super::event_budget::{EventBudget, with_count};
use super::http::Endpoint;
use super::metrics::NotifyMetrics;
use super::retry::{Policy, Verdict, verdict};
use super::settings::{Format, Settings};

/// Failed attempts in a row after which the failure is reported as persistent: a Warning
/// Event on the window of the document held up, and a warning in the log.
pub const PERSISTENT_AFTER: u32 = 5;

struct Queued {
    doc: Notification,
    queued_at: Instant,
}

/// The reconcilers' side: cheap to clone, `send` never blocks. A disabled one (no
/// `--notify-url`) does nothing.
#[derive(Clone)]
pub struct Notifier {
    queue: Option<(mpsc::Sender<Queued>, NotifyMetrics)>,
    cluster: Option<String>,
}

impl Notifier {
    pub fn disabled() -> Self {
        Self {
            queue: None,
            cluster: None,
        }
    }

    pub fn send(&self, mut doc: Notification) {
        let Some((queue, metrics)) = &self.queue else {
            return;
        };
        doc.cluster = self.cluster.clone();
        match queue.try_send(Queued {
            doc,
            queued_at: Instant::now(),
        }) {
            Ok(()) => metrics.queue_depth.inc(),
            Err(TrySendError::Full(q)) => {
                metrics.dropped.with_label_values(&["queue_full"]).inc();
                tracing::warn!(id = %q.doc.id, kind = q.doc.kind.as_str(),
                    "notification queue full (the receiver is slow or away); notification dropped");
            }
            // Only while the controller stops.
            Err(TrySendError::Closed(q)) => {
                tracing::debug!(id = %q.doc.id, "notifier stopped; notification not sent");
            }
        }
    }
}

/// Where Warning Events about failing notifications go.
#[derive(Clone)]
pub struct Events {
    pub client: kube::Client,
    pub reporter: Reporter,
}

/// Starts the delivery task; the notifier feeds it, and it ends once every notifier is
/// dropped and the queue is empty.
pub fn start(
    settings: &Settings,
    metrics: NotifyMetrics,
    events: Option<Events>,
) -> Result<(Notifier, tokio::task::JoinHandle<()>), String> {
    let endpoint = Endpoint::new(settings)?;
    let (tx, rx) = mpsc::channel(settings.queue);
    tracing::info!(receiver = %endpoint.redacted(), format = ?settings.format,
        queue = settings.queue, "sending notifications");
    let task = tokio::spawn(deliver(
        rx,
        endpoint,
        settings.format,
        settings.policy,
        metrics.clone(),
        events,
    ));
    let notifier = Notifier {
        queue: Some((tx, metrics)),
        cluster: settings.cluster.clone(),
    };
    Ok((notifier, task))
}

/// The body posted for `doc`.
pub fn encode(format: Format, doc: &Notification) -> Result<Bytes, serde_json::Error> {
    let body = match format {
        Format::Json => serde_json::to_vec(doc)?,
        Format::Alertmanager => serde_json::to_vec(&alertmanager::alerts(doc))?,
    };
    Ok(Bytes::from(body))
}

fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    // Microsecond digits: clocks with a coarser nanosecond part still vary there.
    f64::from(nanos % 1_000_000) / 1_000_000.0
}

/// At most one `NotificationDropped` (and one `NotificationRejected`) Event a window this
/// often, each counting the drops it stands for (`event_budget`).
const DROP_EVENTS_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

async fn warn_on_window(events: Option<&Events>, window: &str, reason: &str, note: String) {
    if window.is_empty() {
        return;
    }
    let Some(events) = events else { return };
    let regarding: ObjectReference = ObjectRef::<MaintenanceWindow>::new(window).into();
    lifeguard_runtime::events::record(
        &events.client,
        &events.reporter,
        &regarding,
        EventType::Warning,
        reason,
        note,
    )
    .await;
}

async fn deliver(
    mut rx: mpsc::Receiver<Queued>,
    endpoint: Endpoint,
    format: Format,
    policy: Policy,
    metrics: NotifyMetrics,
    events: Option<Events>,
) {
    let receiver = endpoint.redacted();
    // Failed attempts in a row, whichever documents they were for.
    let mut failures: u32 = 0;
    let mut drop_events = EventBudget::new(DROP_EVENTS_EVERY);
    while let Some(q) = rx.recv().await {
        let doc = &q.doc;
        let (id, kind) = (doc.id.as_str(), doc.kind.as_str());
        // A document no window caused (`evictionStop`) warns in the log only.
        let window = doc.window.as_ref().map_or("", |w| w.name.as_str());
        let body = match encode(format, doc) {
            Ok(body) => body,
            Err(error) => {
                metrics.dropped.with_label_values(&["rejected"]).inc();
                tracing::error!(%id, %error, "notification could not be encoded; dropped");
                metrics.queue_depth.dec();
                continue;
            }
        };
        loop {
            let age = q.queued_at.elapsed();
            if policy.expired(age) {
                metrics.dropped.with_label_values(&["expired"]).inc();
                tracing::warn!(%id, %kind, %receiver, ?age,
                    "notification not delivered within --notify-give-up-after; dropped");
                let reason = "NotificationDropped";
                if let Some(drops) = drop_events.spend(window, reason, Instant::now()) {
                    let note = format!(
                        "notification {id} was not delivered to {receiver} within {:?} and was dropped",
                        policy.give_up_after
                    );
                    warn_on_window(events.as_ref(), window, reason, with_count(note, drops)).await;
                }
                break;
            }
            let (verdict, retry_after, detail) = match endpoint.post(body.clone()).await {
                Ok(answer) => (
                    verdict(answer.status),
                    answer.retry_after,
                    format!("HTTP {}", answer.status),
                ),
                Err(failed) => (Verdict::Retry(failed.reason), None, failed.detail),
            };
            match verdict {
                Verdict::Delivered => {
                    metrics.sent.with_label_values(&[kind]).inc();
                    if failures >= PERSISTENT_AFTER {
                        tracing::info!(%receiver, failures, "notifications delivered again");
                    }
                    failures = 0;
                    tracing::debug!(%id, %kind, "notification delivered");
                    break;
                }
                Verdict::Reject(reason) => {
                    metrics.failures.with_label_values(&[reason]).inc();
                    metrics.dropped.with_label_values(&["rejected"]).inc();
                    // The receiver answered: it is there, only this document is refused.
                    failures = 0;
                    tracing::warn!(%id, %kind, %receiver, %detail,
                        "the receiver refused the notification; dropped (not retried)");
                    let reason = "NotificationRejected";
                    if let Some(drops) = drop_events.spend(window, reason, Instant::now()) {
                        let note = format!(
                            "{receiver} refused notification {id} ({detail}); it is not retried"
                        );
                        warn_on_window(events.as_ref(), window, reason, with_count(note, drops))
                            .await;
                    }
                    break;
                }
                Verdict::Retry(reason) => {
                    metrics.failures.with_label_values(&[reason]).inc();
                    failures = failures.saturating_add(1);
                    let wait = policy.delay(failures, retry_after, jitter());
                    if failures == 1 {
                        tracing::warn!(%id, %receiver, %detail, ?wait, "notification failed; retrying with backoff");
                    } else {
                        tracing::debug!(%id, %receiver, %detail, failures, ?wait, "notification failed again");
                    }
                    if failures == PERSISTENT_AFTER {
                        tracing::warn!(%receiver, %detail, failures, "notifications keep failing; they wait in the queue");
                        let note = format!(
                            "notifications to {receiver} keep failing ({failures} attempts in a row, last: {detail}); notification {id} waits"
                        );
                        warn_on_window(events.as_ref(), window, "NotificationsFailing", note).await;
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
        metrics.queue_depth.dec();
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
