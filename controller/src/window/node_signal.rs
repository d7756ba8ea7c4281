//! The per-node signal's I/O: reads Nodes (metadata only) and writes the
//! `lifeguard.dev/drained` label and the window annotation `nodes::node_changes` asks for;
//! clears what a deleted window left, at once and in the periodic sweep.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Error as ControllerError;
use kube::{Client, ResourceExt};
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::names::{NODE_DRAINED_LABEL, NODE_WINDOW_ANNOTATION, WORKSPACE_LABEL};
use lifeguard_runtime::pages::Pages;
use serde_json::{Value, json};

use super::nodes::{
    NodeChange, NodeMeta, NodeTally, held_pods, node_changes, orphaned, pending_elsewhere,
};
use crate::window_watch::WindowCache;
use crate::{Context, Error};

/// Nodes per page: a node's metadata is small, but a large fleet has thousands.
const PAGE: u32 = 500;

/// Every Node when `all` (an active node-scoped window must see which nodes it selects),
/// else only those carrying the label (the ones there may be something to clear on).
pub async fn list(client: &Client, all: bool) -> Result<Vec<NodeMeta>, kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let params = if all {
        ListParams::default()
    } else {
        ListParams::default().labels(NODE_DRAINED_LABEL)
    };
    let mut nodes = Vec::new();
    let mut pages = Pages::new(params.limit(PAGE));
    while let Some(page) = pages.next_metadata(&api).await? {
        nodes.extend(page.into_iter().map(|n: PartialObjectMeta<Node>| NodeMeta {
            name: n.name_any(),
            labels: n.metadata.labels.unwrap_or_default(),
            annotations: n.metadata.annotations.unwrap_or_default(),
        }));
    }
    Ok(nodes)
}

/// Completes window `window`'s `tally` before its nodes are marked: the nodes where another
/// window still has workspaces (from the controller's cache of windows, listed while that
/// has not had its first list), then, on each node that would newly be labelled drained, the
/// workspace pods lifeguard still holds there (one list of that node's pods, so only while
/// a node is about to be promised: a node already labelled drained takes no new workspace).
pub async fn complete_tally(
    ctx: &Context,
    window: &str,
    tally: &mut NodeTally,
    nodes: &[NodeMeta],
    now: Timestamp,
) -> Result<(), Error> {
    let windows = all_windows(&ctx.client, &ctx.windows).await?;
    tally.wait_for_other_windows(pending_elsewhere(
        window,
        windows.iter().map(Arc::as_ref),
        nodes,
        now,
    ));
    let to_check: Vec<String> = node_changes(window, Some(tally), nodes)
        .into_iter()
        .filter_map(|change| match change {
            NodeChange::Mark {
                node,
                drained: true,
            } => Some(node),
            _ => None,
        })
        .collect();
    let pods: Api<Pod> = Api::all(ctx.client.clone());
    for node in to_check {
        let params = ListParams::default()
            .labels(WORKSPACE_LABEL)
            .fields(&format!("spec.nodeName={node}"));
        let mut held = 0;
        let mut pages = Pages::new(params.limit(PAGE));
        while let Some(page) = pages.next_metadata(&pods).await? {
            held += held_pods(page.iter().map(|p: &PartialObjectMeta<Pod>| &p.metadata));
        }
        tally.count_held(&node, held);
    }
    Ok(())
}

async fn all_windows(
    client: &Client,
    cache: &WindowCache,
) -> Result<Vec<Arc<MaintenanceWindow>>, Error> {
    if cache.ready.load(Ordering::Acquire) {
        return Ok(cache.store.state());
    }
    let api: Api<MaintenanceWindow> = Api::all(client.clone());
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(Arc::new)
        .collect())
}

fn patch_for(change: &NodeChange, window: &str) -> (String, Value) {
    match change {
        NodeChange::Mark { node, drained } => (
            node.clone(),
            json!({"metadata": {
                "labels": {NODE_DRAINED_LABEL: if *drained { "true" } else { "false" }},
                "annotations": {NODE_WINDOW_ANNOTATION: window},
            }}),
        ),
        NodeChange::Clear { node } => (
            node.clone(),
            json!({"metadata": {
                "labels": {NODE_DRAINED_LABEL: null},
                "annotations": {NODE_WINDOW_ANNOTATION: null},
            }}),
        ),
    }
}

/// Brings `nodes` to what window `window` says (`tally` while it is active and
/// node-scoped). A merge patch of our two keys only: every other label stays as it is.
/// Returns the nodes that have just turned drained, for the window's `NodeDrained` Event.
pub async fn apply(
    client: &Client,
    window: &str,
    tally: Option<&NodeTally>,
    nodes: &[NodeMeta],
) -> Result<Vec<String>, Error> {
    let api: Api<Node> = Api::all(client.clone());
    let mut drained = Vec::new();
    for change in node_changes(window, tally, nodes) {
        let (node, patch) = patch_for(&change, window);
        api.patch(&node, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        tracing::info!(%window, %node, ?change, "node signal updated");
        if matches!(change, NodeChange::Mark { drained: true, .. }) {
            drained.push(node);
        }
    }
    Ok(drained)
}

/// Clears every node whose annotation names a window that no longer exists (or that
/// carries the label without the annotation). Run at start and with the periodic sweep:
/// the window reconciler is never called for a deleted window.
pub async fn sweep(client: &Client) -> Result<usize, kube::Error> {
    let nodes = list(client, false).await?;
    if nodes.is_empty() {
        return Ok(0);
    }
    let windows: Api<PartialObjectMeta<MaintenanceWindow>> = Api::all(client.clone());
    let names: std::collections::BTreeSet<String> = windows
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|w| w.name_any())
        .collect();
    let api: Api<Node> = Api::all(client.clone());
    let mut cleared = 0;
    for node in orphaned(&nodes, |w| names.contains(w)) {
        let (name, patch) = patch_for(
            &NodeChange::Clear {
                node: node.name.clone(),
            },
            "",
        );
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        tracing::info!(node = %name, "node signal of a deleted window cleared");
        cleared += 1;
    }
    Ok(cleared)
}

/// A deleted window (reported as missing by the controller's result stream) has its nodes
/// cleared at once rather than at the next sweep.
pub fn on_deleted<T, E1, E2>(client: &Client, result: &Result<T, ControllerError<E1, E2>>) {
    let Err(ControllerError::ObjectNotFound(window)) = result else {
        return;
    };
    let (client, window) = (client.clone(), window.name.clone());
    tokio::spawn(async move {
        let cleared = async {
            let nodes = list(&client, false).await?;
            apply(&client, &window, None, &nodes).await.map(|_| ())
        };
        if let Err(error) = cleared.await {
            tracing::warn!(%window, %error, "clearing the deleted window's nodes failed; the sweep retries");
        }
    });
}
