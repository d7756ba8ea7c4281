//! Sweeps for pods that would otherwise stay Terminating: at start and periodically, every
//! pod holding our finalizer whose Workspace is gone, or that has been deleting longer than
//! the disposal timeout, is released.

use std::collections::HashSet;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};
use kube::core::PartialObjectMeta;
use kube::{Client, Resource};
use lifeguard_api::Workspace;
use lifeguard_api::names::{POD_FINALIZER, WORKSPACE_LABEL};

use crate::finalizers::{self, Removal};
use crate::metrics::Metrics;
use crate::plan::Settings;

/// Why a pod is released, if it should be.
pub fn release_cause(
    pod: &ObjectMeta,
    workspace_exists: bool,
    now: Timestamp,
    settings: &Settings,
) -> Option<&'static str> {
    if !holds_our_finalizer(pod) {
        return None;
    }
    if !workspace_exists {
        return Some("workspace_gone");
    }
    let overdue = pod
        .deletion_timestamp
        .as_ref()
        .and_then(|t| t.0.checked_add(settings.disposal_timeout).ok())
        .is_some_and(|deadline| now >= deadline);
    overdue.then_some("deletion_overdue")
}

fn holds_our_finalizer(meta: &ObjectMeta) -> bool {
    meta.finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == POD_FINALIZER))
}

/// Page size of the sweep's lists: memory stays flat however many workspaces there are.
/// A page of 500 pods' metadata (managedFields included) briefly cost about 5 MB.
const PAGE: u32 = 100;

/// Every `(namespace, name)` of a Workspace, from paged metadata lists.
async fn workspace_keys(client: &Client) -> Result<HashSet<(String, String)>, kube::Error> {
    let api: Api<Workspace> = Api::all(client.clone());
    let mut keys = HashSet::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list_metadata(&params).await?;
        keys.extend(
            page.items
                .into_iter()
                .filter_map(|w| Some((w.metadata.namespace?, w.metadata.name?))),
        );
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(keys),
        }
    }
}

/// Workspace pods are read as metadata, page by page, and Workspaces once per sweep; a
/// Workspace missing from that list is confirmed with a GET, since it may have been
/// created after the list was taken.
pub async fn sweep_once(
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
) -> Result<usize, kube::Error> {
    let workspaces = workspace_keys(client).await?;
    let pods: Api<Pod> = Api::all(client.clone());
    let mut released = 0;
    let mut params = ListParams::default().labels(WORKSPACE_LABEL).limit(PAGE);
    loop {
        let page = pods.list_metadata(&params).await?;
        for pod in &page.items {
            released += sweep_pod(client, &workspaces, pod, settings, metrics).await?;
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(released),
        }
    }
}

async fn sweep_pod(
    client: &Client,
    workspaces: &HashSet<(String, String)>,
    pod: &PartialObjectMeta<Pod>,
    settings: &Settings,
    metrics: &Metrics,
) -> Result<usize, kube::Error> {
    let meta = pod.meta();
    let (Some(namespace), Some(name), Some(workspace)) = (
        meta.namespace.clone(),
        meta.name.clone(),
        meta.labels
            .as_ref()
            .and_then(|l| l.get(WORKSPACE_LABEL))
            .cloned(),
    ) else {
        return Ok(0);
    };
    if !holds_our_finalizer(meta) {
        return Ok(0);
    }
    let exists = workspaces.contains(&(namespace.clone(), workspace.clone())) || {
        let api: Api<Workspace> = Api::namespaced(client.clone(), &namespace);
        api.get_metadata_opt(&workspace).await?.is_some()
    };
    let Some(cause) = release_cause(meta, exists, Timestamp::now(), settings) else {
        return Ok(0);
    };
    let namespaced: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    match finalizers::remove(&namespaced, &name, POD_FINALIZER).await? {
        Removal::Removed { .. } => {
            metrics.sweep_releases.with_label_values(&[cause]).inc();
            tracing::info!(pod = %name, %namespace, cause, "sweep released pod");
            Ok(1)
        }
        _ => Ok(0),
    }
}

pub async fn run(client: Client, settings: Settings, metrics: Metrics, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        if let Err(error) = sweep_once(&client, &settings, &metrics).await {
            tracing::warn!(%error, "sweep failed; trying again next interval");
        }
        crate::memory::release_free_heap();
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
        let pod = |meta: serde_json::Value| -> ObjectMeta {
            serde_json::from_value(meta).expect("metadata literal")
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
