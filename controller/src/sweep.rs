//! Sweeps for pods that would otherwise stay Terminating: at start and periodically, every
//! pod holding our finalizer whose Workspace is gone, or that has been deleting longer than
//! the disposal timeout, is released. "Its Workspace" is the one its controlling owner
//! reference names by UID: a pod left by a deleted Workspace is released even when a new
//! Workspace of the same name exists (which never adopts it).

use std::collections::HashMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ListParams};
use kube::core::PartialObjectMeta;
use kube::{Client, Resource};
use lifeguard_api::Workspace;
use lifeguard_api::disposal;
use lifeguard_api::names::{POD_FINALIZER, WORKSPACE_LABEL};
use lifeguard_runtime::pages::Pages;

use crate::finalizers::{self, Removal};
use crate::metrics::Metrics;
use crate::workspace::plan::Settings;

/// The Workspace that controls the pod, if one does.
pub fn controlling_workspace(pod: &ObjectMeta) -> Option<&OwnerReference> {
    pod.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true) && r.kind == "Workspace")
}

#[derive(Debug, PartialEq)]
pub enum OwnerCheck<'a> {
    /// The controlling Workspace, with this UID, is in the list.
    Listed,
    /// No Workspace controls the pod (a stranger's pod carrying our label): there is no
    /// Workspace to wait for.
    NoOwner,
    /// Not in the list under this UID: it may have been created after the list was taken,
    /// so a GET decides (and a same-named Workspace with another UID is not the owner).
    Confirm(&'a OwnerReference),
}

pub fn owner_in_list<'a>(
    pod: &'a ObjectMeta,
    workspaces: &HashMap<(String, String), String>,
) -> OwnerCheck<'a> {
    let Some(owner) = controlling_workspace(pod) else {
        return OwnerCheck::NoOwner;
    };
    let key = (
        pod.namespace.clone().unwrap_or_default(),
        owner.name.clone(),
    );
    if workspaces.get(&key) == Some(&owner.uid) {
        OwnerCheck::Listed
    } else {
        OwnerCheck::Confirm(owner)
    }
}

/// Why a pod is released, if it should be. `workspace_exists`: the Workspace that
/// controls the pod (`controlling_workspace`, matched by UID) still exists.
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
    // A pod waiting for its backup agent is the reconciler's to release (it records the
    // outcome first): the sweep steps in only a disposal timeout after that wait is over.
    let allowed = if disposal::confirmation_required(pod.annotations.as_ref())
        && disposal::result(pod.annotations.as_ref()).is_none()
    {
        settings
            .disposal_confirm_timeout
            .checked_add(settings.disposal_timeout)
            .unwrap_or(settings.disposal_confirm_timeout)
    } else {
        settings.disposal_timeout
    };
    let overdue = pod
        .deletion_timestamp
        .as_ref()
        .and_then(|t| t.0.checked_add(allowed).ok())
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

/// Every Workspace's UID by `(namespace, name)`, from paged metadata lists.
async fn workspace_keys(client: &Client) -> Result<HashMap<(String, String), String>, kube::Error> {
    let api: Api<Workspace> = Api::all(client.clone());
    let mut keys = HashMap::new();
    let mut pages = Pages::new(ListParams::default().limit(PAGE));
    while let Some(page) = pages.next_metadata(&api).await? {
        keys.extend(
            page.into_iter()
                .filter_map(|w| Some(((w.metadata.namespace?, w.metadata.name?), w.metadata.uid?))),
        );
    }
    Ok(keys)
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
    let mut pages = Pages::new(ListParams::default().labels(WORKSPACE_LABEL).limit(PAGE));
    while let Some(page) = pages.next_metadata(&pods).await? {
        for pod in &page {
            released += sweep_pod(client, &workspaces, pod, settings, metrics).await?;
        }
    }
    Ok(released)
}

async fn sweep_pod(
    client: &Client,
    workspaces: &HashMap<(String, String), String>,
    pod: &PartialObjectMeta<Pod>,
    settings: &Settings,
    metrics: &Metrics,
) -> Result<usize, kube::Error> {
    let meta = pod.meta();
    let (Some(namespace), Some(name)) = (meta.namespace.clone(), meta.name.clone()) else {
        return Ok(0);
    };
    if !holds_our_finalizer(meta) {
        return Ok(0);
    }
    let exists = match owner_in_list(meta, workspaces) {
        OwnerCheck::Listed => true,
        OwnerCheck::NoOwner => false,
        OwnerCheck::Confirm(owner) => {
            let api: Api<Workspace> = Api::namespaced(client.clone(), &namespace);
            api.get_metadata_opt(&owner.name)
                .await?
                .is_some_and(|w| w.metadata.uid.as_deref() == Some(owner.uid.as_str()))
        }
    };
    let Some(cause) = release_cause(meta, exists, Timestamp::now(), settings) else {
        return Ok(0);
    };
    let namespaced: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    match finalizers::release_pod(&namespaced, &name, None).await? {
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
        // Node signals of windows deleted while no controller led (or whose immediate
        // clean-up failed).
        if let Err(error) = crate::window::node_signal::sweep(&client).await {
            tracing::warn!(%error, "node signal sweep failed; trying again next interval");
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
        // Disposal timeout 2m; the backup agent's wait 10m.
        let settings = Settings {
            disposal_confirm_timeout: jiff::SignedDuration::from_mins(10),
            ..Settings::default()
        };
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
                "overdue, but waiting for its backup agent",
                pod(
                    json!({"name": "ws-a", "finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": "2026-12-01T11:50:00Z",
                           "annotations": {"lifeguard.dev/disposal-confirmation": "required"}}),
                ),
                true,
                None,
            ),
            (
                "overdue, the agent answered",
                pod(
                    json!({"name": "ws-a", "finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": "2026-12-01T11:50:00Z",
                           "annotations": {"lifeguard.dev/disposal-confirmation": "required",
                                           "lifeguard.dev/disposal-result": "saved"}}),
                ),
                true,
                Some("deletion_overdue"),
            ),
            (
                "the agent's wait and a disposal timeout over",
                pod(
                    json!({"name": "ws-a", "finalizers": ["lifeguard.dev/disposal"], "deletionTimestamp": "2026-12-01T11:47:00Z",
                           "annotations": {"lifeguard.dev/disposal-confirmation": "required"}}),
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

    #[test]
    fn the_owner_is_the_workspace_named_by_uid_not_by_name() {
        let workspaces = HashMap::from([(
            ("team".to_string(), "alice".to_string()),
            "uid-now".to_string(),
        )]);
        let pod = |owners: serde_json::Value| -> ObjectMeta {
            serde_json::from_value(json!({"name": "ws-alice", "namespace": "team",
                "labels": {"lifeguard.dev/workspace": "alice"},
                "finalizers": ["lifeguard.dev/disposal"], "ownerReferences": owners}))
            .expect("metadata literal")
        };
        let owner = |uid: &str, controller: bool| {
            json!([{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace", "name": "alice",
                    "uid": uid, "controller": controller}])
        };
        let current = pod(owner("uid-now", true));
        assert_eq!(owner_in_list(&current, &workspaces), OwnerCheck::Listed);
        let predecessor = pod(owner("uid-before", true));
        assert!(
            matches!(owner_in_list(&predecessor, &workspaces), OwnerCheck::Confirm(o) if o.uid == "uid-before"),
            "a same-named Workspace with another UID is not the owner; a GET confirms by UID"
        );
        let stranger = pod(json!([]));
        assert_eq!(owner_in_list(&stranger, &workspaces), OwnerCheck::NoOwner);
        let not_controller = pod(owner("uid-now", false));
        assert_eq!(
            owner_in_list(&not_controller, &workspaces),
            OwnerCheck::NoOwner,
            "only the controlling reference counts"
        );
        // With no owning Workspace the pod is released, as for a deleted Workspace.
        let now: Timestamp = "2026-12-01T12:00:00Z".parse().expect("time");
        assert_eq!(
            release_cause(&stranger, false, now, &Settings::default()),
            Some("workspace_gone")
        );
    }
}
