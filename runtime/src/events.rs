//! Events (`events.k8s.io/v1`) written directly, without kube's `Recorder`, by the controller
//! and the prober, for two reasons:
//!
//! - The `Recorder` keeps every Event it published for six minutes, to count repeats into
//!   a series. lifeguard's Events are one per decision, so repeats are rare. With 10,000
//!   workspaces starting at once that cache alone held tens of megabytes.
//! - It puts an Event about a cluster-scoped object into `default`. Older API servers
//!   (1.20 among them) reject that: a new-style Event (with `eventTime`) about a
//!   cluster-scoped object must be in `kube-system` there. Current servers accept both, so
//!   `kube-system` is the one namespace every server takes.
//!   `kubectl describe` and `kubectl get events -A` still find the Events by the object they
//!   are about.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};

/// The namespace every API server accepts new-style Events about cluster-scoped objects in.
pub const CLUSTER_EVENT_NAMESPACE: &str = "kube-system";

/// The API server refuses an Event whose note is longer than this many bytes.
pub const MAX_NOTE_BYTES: usize = 1024;

/// Cuts `note` to what the API server accepts, on a character boundary, marking the cut, so
/// a long user-written message (a maintenance window's, say) does not lose the whole Event.
pub fn fit_note(note: &str) -> String {
    if note.len() <= MAX_NOTE_BYTES {
        return note.to_owned();
    }
    const MARK: &str = "…";
    let mut end = MAX_NOTE_BYTES - MARK.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &note[..end])
}

/// Builds the Event (pure, so its shape is tested without a cluster). A namespaced object's
/// Event goes into that namespace; a cluster-scoped object's into `kube-system`.
pub fn build_event(
    reporter: &Reporter,
    regarding: &ObjectReference,
    event: &Event,
    now: jiff::Timestamp,
) -> K8sEvent {
    let subject = regarding.name.as_deref().unwrap_or(&reporter.controller);
    let namespace = regarding.namespace.as_deref().filter(|ns| !ns.is_empty());
    K8sEvent {
        metadata: ObjectMeta {
            namespace: Some(namespace.unwrap_or(CLUSTER_EVENT_NAMESPACE).into()),
            name: Some(format!("{subject}.{:x}", now.as_nanosecond())),
            ..ObjectMeta::default()
        },
        action: Some(event.action.clone()),
        reason: Some(event.reason.clone()),
        note: event.note.as_deref().map(fit_note),
        event_time: Some(MicroTime(now)),
        regarding: Some(ObjectReference {
            namespace: namespace.map(str::to_owned),
            ..regarding.clone()
        }),
        related: event.secondary.clone(),
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(
            reporter
                .instance
                .clone()
                .unwrap_or_else(|| reporter.controller.clone()),
        ),
        type_: Some(
            match event.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .into(),
        ),
        ..K8sEvent::default()
    }
}

/// Publishes an Event about `regarding`; nothing is kept once the API server has it.
pub async fn publish(
    client: &kube::Client,
    reporter: &Reporter,
    regarding: &ObjectReference,
    event: &Event,
) -> Result<(), kube::Error> {
    create(
        client,
        &build_event(reporter, regarding, event, jiff::Timestamp::now()),
    )
    .await
}

/// Creates a built Event in the namespace it names.
async fn create(client: &kube::Client, body: &K8sEvent) -> Result<(), kube::Error> {
    let namespace = body
        .metadata
        .namespace
        .as_deref()
        .unwrap_or(CLUSTER_EVENT_NAMESPACE);
    let events: Api<K8sEvent> = Api::namespaced(client.clone(), namespace);
    events.create(&PostParams::default(), body).await?;
    Ok(())
}

/// The Event `record` publishes, built at `now`, the time of the decision it reports: one
/// published later (`background_events`) still carries that time and a name in that order.
pub fn recorded(
    reporter: &Reporter,
    regarding: &ObjectReference,
    type_: EventType,
    reason: &str,
    note: String,
    now: jiff::Timestamp,
) -> K8sEvent {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    build_event(reporter, regarding, &event, now)
}

/// Publishes an Event built by `recorded`. A failure is logged, not returned: the Event
/// reports a decision that is made and written already, and must not undo it.
pub async fn send(client: &kube::Client, body: &K8sEvent) {
    if let Err(error) = create(client, body).await {
        let reason = body.reason.as_deref().unwrap_or_default();
        let about = body
            .regarding
            .as_ref()
            .and_then(|r| r.name.as_deref())
            .unwrap_or_default();
        tracing::warn!(%error, %reason, %about, "cannot publish event");
    }
}

/// Publishes an Event whose action is its reason, built now; a failure is logged (`send`).
pub async fn record(
    client: &kube::Client,
    reporter: &Reporter,
    regarding: &ObjectReference,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let body = recorded(
        reporter,
        regarding,
        type_,
        reason,
        note,
        jiff::Timestamp::now(),
    );
    send(client, &body).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reporter() -> Reporter {
        Reporter {
            controller: "lifeguard-controller".into(),
            instance: Some("replica-1".into()),
        }
    }

    fn drained() -> Event {
        Event {
            type_: EventType::Warning,
            reason: "Drained".into(),
            note: Some("all stopped".into()),
            action: "Drain".into(),
            secondary: None,
        }
    }

    fn at() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000).unwrap_or_default()
    }

    #[test]
    fn cluster_scoped_events_live_in_kube_system_and_name_no_namespace() {
        let regarding = ObjectReference {
            kind: Some("MaintenanceWindow".into()),
            name: Some("upgrade".into()),
            namespace: Some(String::new()),
            ..ObjectReference::default()
        };
        let built = build_event(&reporter(), &regarding, &drained(), at());
        assert_eq!(built.metadata.namespace.as_deref(), Some("kube-system"));
        assert!(
            built
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("upgrade."))
        );
        let about = built.regarding.unwrap_or_default();
        assert_eq!(
            (about.namespace, about.name.as_deref()),
            (None, Some("upgrade"))
        );
        assert_eq!(built.type_.as_deref(), Some("Warning"));
        assert_eq!(built.reporting_instance.as_deref(), Some("replica-1"));
        assert!(built.event_time.is_some());
    }

    #[test]
    fn a_recorded_event_carries_the_time_it_was_recorded_and_its_reason_as_action() {
        let regarding = ObjectReference {
            kind: Some("Workspace".into()),
            name: Some("ws-1".into()),
            namespace: Some("team-a".into()),
            ..ObjectReference::default()
        };
        let built = recorded(
            &reporter(),
            &regarding,
            EventType::Normal,
            "PodCreated",
            "created pod ws-1-pod".into(),
            at(),
        );
        assert_eq!(built.event_time, Some(MicroTime(at())));
        assert_eq!(
            built.metadata.name,
            Some(format!("ws-1.{:x}", at().as_nanosecond()))
        );
        assert_eq!(built.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            (built.reason.as_deref(), built.action.as_deref()),
            (Some("PodCreated"), Some("PodCreated"))
        );
        assert_eq!(built.note.as_deref(), Some("created pod ws-1-pod"));
    }

    #[test]
    fn long_notes_are_cut_to_what_the_api_server_accepts() {
        let cases = [
            (
                "short",
                "window upgrade".to_owned(),
                "window upgrade".to_owned(),
            ),
            ("exactly the limit", "a".repeat(1024), "a".repeat(1024)),
            (
                "ascii over",
                "a".repeat(2000),
                format!("{}…", "a".repeat(1021)),
            ),
            // 'é' is two bytes: the cut must not split one.
            (
                "multibyte over",
                "é".repeat(600),
                format!("{}…", "é".repeat(510)),
            ),
        ];
        for (what, note, expected) in cases {
            let fitted = fit_note(&note);
            assert!(
                fitted.len() <= MAX_NOTE_BYTES,
                "{what}: {} bytes",
                fitted.len()
            );
            assert_eq!(fitted, expected, "{what}");
        }
    }

    #[test]
    fn namespaced_events_live_beside_their_object() {
        let regarding = ObjectReference {
            kind: Some("Workspace".into()),
            name: Some("alice".into()),
            namespace: Some("team-a".into()),
            uid: Some("1234".into()),
            ..ObjectReference::default()
        };
        let built = build_event(&reporter(), &regarding, &drained(), at());
        assert_eq!(built.metadata.namespace.as_deref(), Some("team-a"));
        let about = built.regarding.unwrap_or_default();
        assert_eq!(
            (about.namespace.as_deref(), about.uid.as_deref()),
            (Some("team-a"), Some("1234"))
        );
        assert_eq!(built.reason.as_deref(), Some("Drained"));
    }
}
