//! lifeguard's controller: keeps one pod per Workspace, recovers pods the kubelet rejected
//! after scheduling, and releases the disposal finalizer only once a pod's end is recorded.

pub mod backoff;
pub mod disposal;
mod error;
pub mod finalizers;
pub mod flags;
pub mod grace;
pub mod leader;
pub mod memory;
pub mod metrics;
pub mod mount_events;
pub mod namespaces;
pub mod node_loss;
pub mod nodes;
pub mod notice;
pub mod notice_reach;
pub mod notify;
pub mod phase_tally;
pub mod pod_echoes;
pub mod pod_ended;
pub mod pod_names;
pub mod podspec;
pub mod rejection;
pub mod settings;
pub mod status;
pub mod stopping;
pub mod sweep;
pub mod watched_workspace;
pub mod window;
pub mod window_watch;
pub mod workspace;

pub mod run;

pub use error::Error;
use error::{GONE, retry_wait};
pub use run::run;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use kube::runtime::controller::Action as Requeue;
use lifeguard_runtime::background_events::BackgroundEvents;

use crate::metrics::Metrics;
use crate::nodes::NodeStore;
use crate::settings::Settings;
use crate::window_watch::WindowCache;

/// The field manager of every status the controller writes (server-side apply), and the
/// reporting controller of its Events.
pub const FIELD_MANAGER: &str = "lifeguard-controller";

/// What both reconcilers share: the client, the caches, the settings and the metrics.
pub struct Context {
    pub client: kube::Client,
    /// The MaintenanceWindows, for notices (`window_watch`).
    pub windows: WindowCache,
    /// Namespace labels, for windows' `namespaceSelector`s (`namespaces`).
    pub namespaces: namespaces::NamespaceCache,
    pub settings: Settings,
    /// Publishes Events as this replica, beside the reconciles rather than in their way
    /// (`lifeguard_runtime::background_events`).
    pub events: BackgroundEvents,
    pub metrics: Metrics,
    /// Node readiness (`nodes`), and whether its first list is in.
    pub nodes: NodeStore,
    /// Which workspace pods exist, by name (`pod_names`), so a new Workspace's first
    /// reconcile need not read a pod that cannot exist yet.
    pub pods: pod_names::PodNames,
    /// Starting pods' latest mount failures (`mount_events`), from a watch of those Events.
    pub mount_events: mount_events::MountEvents,
    pub nodes_ready: Arc<AtomicBool>,
    /// Wakes a draining window when one of its stops ends (`window::stop_ended`), so its
    /// next stop starts at once instead of at its next poll.
    pub stop_ended: tokio::sync::mpsc::Sender<
        kube::runtime::reflector::ObjectRef<lifeguard_api::MaintenanceWindow>,
    >,
    /// What drain gates ask (`--prometheus-url`), if configured.
    pub prometheus: Option<window::prometheus::Prometheus>,
    /// Notifications outside the cluster (`--notify-url`); only enqueues, never waits.
    pub notify: notify::Notifier,
    /// Each Workspace's phase as the reconciler last read or wrote it, for the gauge of
    /// workspaces by phase (`phase_tally`).
    pub phases: phase_tally::PhaseTally,
    /// Each window's last survey of the Workspaces, which paces the next
    /// (`window::pacing`).
    pub surveys: window::pacing::SurveyPacer,
    /// What the watch of Workspaces shows of each, for the windows' surveys.
    pub survey_index: window::survey_index::SurveyIndex,
    /// Held from counting the evicted pods being stopped (on the node and in the cluster)
    /// to telling one more of its stop, so concurrent reconciles never exceed
    /// `--eviction-max-per-node` or `--eviction-max-concurrent`. It keeps the pods this
    /// replica told lately, with when, which the pod watch may not show yet
    /// (`workspace::eviction::cluster_in_flight`).
    pub eviction_gate:
        tokio::sync::Mutex<std::collections::HashMap<pod_names::PodKey, jiff::Timestamp>>,
}

impl Context {
    /// Records an Event about `object` as this replica (`lifeguard_runtime::events`).
    pub async fn event<K: kube::Resource<DynamicType = ()>>(
        &self,
        object: &K,
        type_: kube::runtime::events::EventType,
        reason: &str,
        note: String,
    ) {
        self.events
            .record(&object.object_ref(&()), type_, reason, note)
            .await;
    }

    /// What both reconcilers do when one fails: count it by reason, say so, and look again
    /// soon (at once, nearly, after a conflict or a deletion: a fresh read resolves it).
    pub fn retry_after(&self, error: &Error, kind: &str, name: &str) -> Requeue {
        let reason = error.reason();
        self.metrics.reconciles.with_label_values(&[reason]).inc();
        if reason == GONE {
            // Deleted while the pass ran: the next read finds it gone and stops. Nothing
            // failed that an operator could act on, so no warning.
            tracing::debug!(%kind, %name, %error, "deleted during the reconcile; looking again");
        } else {
            tracing::warn!(%kind, %name, %error, "reconcile failed; retrying");
        }
        Requeue::requeue(retry_wait(reason))
    }
}
