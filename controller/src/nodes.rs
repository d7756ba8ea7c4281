//! The controller's view of node readiness, for `node_loss`: a cache holding each Node's
//! name, labels and Ready condition only (a full Node carries its image list, kilobytes each), and
//! a trigger that reconciles the workspaces whose pods are on a node when its readiness
//! changes or it is removed.

use std::collections::HashMap;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_api::names::WORKSPACE_LABEL;
use lifeguard_runtime::pages::Pages;

pub type NodeStore = Store<Node>;
pub type WorkspaceRef = ObjectRef<PartialObjectMeta<Workspace>>;

/// Keeps what `node_loss::node_health` reads: the name, the creation time and the Ready
/// condition; and the labels, which say whether a node-scoped window's notice applies to
/// a workspace on the node (a few hundred bytes a node).
fn strip(node: &mut Node) {
    let meta = std::mem::take(&mut node.metadata);
    node.metadata.name = meta.name;
    node.metadata.labels = meta.labels;
    node.metadata.creation_timestamp = meta.creation_timestamp;
    node.metadata.resource_version = meta.resource_version;
    node.spec = None;
    if let Some(status) = node.status.take() {
        let ready = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.type_ == "Ready")
            .collect();
        node.status = Some(k8s_openapi::api::core::v1::NodeStatus {
            conditions: Some(ready),
            ..Default::default()
        });
    }
}

fn is_ready(node: &Node) -> bool {
    matches!(
        crate::node_loss::node_health(Some(node)),
        crate::node_loss::NodeHealth::Ready
    )
}

/// Starts watching Nodes. Returns the cache (ready once the first list is in) and the
/// stream of workspaces to reconcile because their node changed.
pub fn watch(client: Client) -> (NodeStore, mpsc::UnboundedReceiver<WorkspaceRef>) {
    let (store, writer) = reflector::store();
    let (trigger, triggers) = mpsc::unbounded();
    let events = watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .modify(strip)
        .reflect(writer);
    tokio::spawn(async move {
        let mut ready: HashMap<String, bool> = HashMap::new();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let changed = match event {
                Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node)) => {
                    let name = node.name_any();
                    let now = is_ready(&node);
                    // A node seen for the first time changes nothing: every workspace is
                    // reconciled when the controller starts anyway.
                    let before = ready.insert(name.clone(), now);
                    (before.is_some_and(|b| b != now)).then_some(name)
                }
                Ok(watcher::Event::Delete(node)) => {
                    let name = node.name_any();
                    ready.remove(&name);
                    Some(name)
                }
                Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
                Err(error) => {
                    tracing::warn!(%error, "watching nodes failed; retrying");
                    None
                }
            };
            if let Some(node) = changed {
                match workspaces_on(&client, &node).await {
                    Ok(refs) => {
                        tracing::info!(%node, workspaces = refs.len(), "node readiness changed");
                        for r in refs {
                            if trigger.unbounded_send(r).is_err() {
                                return; // the controller stopped
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%node, %error, "listing the node's workspace pods failed")
                    }
                }
            }
        }
    });
    (store, triggers)
}

/// The Workspaces owning the workspace pods bound to `node`.
async fn workspaces_on(client: &Client, node: &str) -> Result<Vec<WorkspaceRef>, kube::Error> {
    let pods: Api<PartialObjectMeta<Pod>> = Api::all(client.clone());
    let mut pages = Pages::new(
        ListParams::default()
            .labels(WORKSPACE_LABEL)
            .fields(&format!("spec.nodeName={node}"))
            .limit(500),
    );
    let mut refs = Vec::new();
    while let Some(page) = pages.next_metadata(&pods).await? {
        for pod in &page {
            let Some(namespace) = pod.namespace() else {
                continue;
            };
            for owner in pod.owner_references() {
                if owner.kind == "Workspace" && owner.api_version.starts_with("lifeguard.dev/") {
                    refs.push(ObjectRef::new(&owner.name).within(&namespace));
                }
            }
        }
    }
    Ok(refs)
}
