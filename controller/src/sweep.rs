//! Sweeps for pods that would otherwise stay Terminating: at start and periodically, every
//! pod holding our finalizer whose Workspace is gone, or that has been deleting longer than
//! the disposal timeout, is released.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_api::names::{POD_FINALIZER, WORKSPACE_LABEL};

use crate::finalizers::{self, Removal};
use crate::metrics::Metrics;
use crate::plan::Settings;

/// Why a pod is released, if it should be.
pub fn release_cause(
    pod: &Pod,
    workspace_exists: bool,
    now: Timestamp,
    settings: &Settings,
) -> Option<&'static str> {
    if !pod.finalizers().iter().any(|f| f == POD_FINALIZER) {
        return None;
    }
    if !workspace_exists {
        return Some("workspace_gone");
    }
    let overdue = pod
        .metadata
        .deletion_timestamp
        .as_ref()
        .and_then(|t| t.0.checked_add(settings.disposal_timeout).ok())
        .is_some_and(|deadline| now >= deadline);
    overdue.then_some("deletion_overdue")
}

pub async fn sweep_once(
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
) -> Result<usize, kube::Error> {
    let pods: Api<Pod> = Api::all(client.clone());
    let mut released = 0;
    for pod in pods
        .list(&ListParams::default().labels(WORKSPACE_LABEL))
        .await?
    {
        let (Some(namespace), Some(workspace)) =
            (pod.namespace(), pod.labels().get(WORKSPACE_LABEL).cloned())
        else {
            continue;
        };
        if !pod.finalizers().iter().any(|f| f == POD_FINALIZER) {
            continue;
        }
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &namespace);
        let exists = workspaces.get_opt(&workspace).await?.is_some();
        let Some(cause) = release_cause(&pod, exists, Timestamp::now(), settings) else {
            continue;
        };
        let namespaced: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        if let Removal::Removed { .. } =
            finalizers::remove(&namespaced, &pod.name_any(), POD_FINALIZER).await?
        {
            released += 1;
            metrics.sweep_releases.with_label_values(&[cause]).inc();
            tracing::info!(pod = %pod.name_any(), %namespace, cause, "sweep released pod");
        }
    }
    Ok(released)
}

pub async fn run(client: Client, settings: Settings, metrics: Metrics, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        if let Err(error) = sweep_once(&client, &settings, &metrics).await {
            tracing::warn!(%error, "sweep failed; trying again next interval");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn releases_orphans_and_overdue_deletions_only() {
        let settings = Settings::default();
        let now: Timestamp = "2026-12-01T12:00:00Z".parse().expect("time");
        let pod = |meta: serde_json::Value| -> Pod {
            serde_json::from_value(json!({"metadata": meta})).expect("pod literal")
        };
        let ours = json!({"name": "ws-a", "finalizers": ["lifeguard.dev/disposal"]});
        let cases = vec![
            ("orphan", pod(ours.clone()), false, Some("workspace_gone")),
            ("healthy", pod(ours.clone()), true, None),
            (
                "deleting, within timeout",
                pod(
                    json!({"name": "ws-a", "finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": "2026-12-01T11:59:00Z"}),
                ),
                true,
                None,
            ),
            (
                "deleting, overdue",
                pod(
                    json!({"name": "ws-a", "finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": "2026-12-01T11:50:00Z"}),
                ),
                true,
                Some("deletion_overdue"),
            ),
            (
                "not ours",
                pod(json!({"name": "ws-a", "finalizers": ["example.com/keep"]})),
                false,
                None,
            ),
        ];
        for (what, pod, exists, expected) in cases {
            assert_eq!(
                release_cause(&pod, exists, now, &settings),
                expected,
                "{what}"
            );
        }
    }
}
