//! Events about cluster-scoped objects (MaintenanceWindows, Nodes).
//!
//! kube's `Recorder` writes an `events.k8s.io/v1` Event into the object's namespace, or
//! `default` for a cluster-scoped one. API servers up to at least 1.20 reject that: a
//! new-style Event (with `eventTime`) about a cluster-scoped object must live in
//! `kube-system`. Newer servers accept `kube-system` too, so that is where these go;
//! `kubectl describe` and `kubectl get events -A` still find them by the regarding object.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};

/// The namespace every API server accepts new-style Events about cluster-scoped objects in.
pub const CLUSTER_EVENT_NAMESPACE: &str = "kube-system";

/// Builds the Event (pure, so its shape is tested without a cluster).
pub fn cluster_scoped_event(
    reporter: &Reporter,
    regarding: &ObjectReference,
    event: &Event,
    now: jiff::Timestamp,
) -> K8sEvent {
    let subject = regarding.name.as_deref().unwrap_or(&reporter.controller);
    K8sEvent {
        metadata: ObjectMeta {
            namespace: Some(CLUSTER_EVENT_NAMESPACE.into()),
            name: Some(format!("{subject}.{:x}", now.as_nanosecond())),
            ..ObjectMeta::default()
        },
        action: Some(event.action.clone()),
        reason: Some(event.reason.clone()),
        note: event.note.clone(),
        event_time: Some(MicroTime(now)),
        regarding: Some(ObjectReference {
            namespace: None,
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

/// Publishes an Event about a cluster-scoped object.
pub async fn publish_cluster_scoped(
    client: &kube::Client,
    reporter: &Reporter,
    regarding: &ObjectReference,
    event: &Event,
) -> Result<(), kube::Error> {
    let events: Api<K8sEvent> = Api::namespaced(client.clone(), CLUSTER_EVENT_NAMESPACE);
    let body = cluster_scoped_event(reporter, regarding, event, jiff::Timestamp::now());
    events.create(&PostParams::default(), &body).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_scoped_events_live_in_kube_system_and_name_no_namespace() {
        let reporter = Reporter {
            controller: "lifeguard-controller".into(),
            instance: Some("replica-1".into()),
        };
        let regarding = ObjectReference {
            kind: Some("MaintenanceWindow".into()),
            name: Some("upgrade".into()),
            namespace: Some(String::new()),
            ..ObjectReference::default()
        };
        let event = Event {
            type_: EventType::Warning,
            reason: "Drained".into(),
            note: Some("all stopped".into()),
            action: "Drain".into(),
            secondary: None,
        };
        let at = jiff::Timestamp::from_second(1_700_000_000).unwrap_or_default();
        let built = cluster_scoped_event(&reporter, &regarding, &event, at);
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
}
