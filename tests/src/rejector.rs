//! The "rejector": makes the real kubelet reject workspace pods after scheduling, the way
//! out-of-sync node labels do in production. Workspaces under test are pinned to the node
//! and select a label unique to the test; removing that label from the node makes the
//! kubelet's admission check fail (reason NodeAffinity), restoring it lets pods in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams};
use lifeguard_api::Workspace;
use serde_json::{Value, json};

pub struct Rejector {
    nodes: Api<Node>,
    pub node: String,
    pub label: String,
}

impl Rejector {
    pub fn new(client: &Client, node: &str, label: &str) -> Self {
        Self {
            nodes: Api::all(client.clone()),
            node: node.to_string(),
            label: label.to_string(),
        }
    }

    /// Pod template fields that bind a workspace pod to the node under this rejector.
    pub fn pod_spec_fields(&self) -> Value {
        json!({"nodeName": self.node, "nodeSelector": {self.label.clone(): "true"}})
    }

    /// From now on the kubelet admits the pods.
    pub async fn admit(&self) -> anyhow::Result<()> {
        self.set(json!("true")).await
    }

    /// From now on the kubelet rejects the pods.
    pub async fn reject(&self) -> anyhow::Result<()> {
        self.set(Value::Null).await
    }

    async fn set(&self, value: Value) -> anyhow::Result<()> {
        let patch = json!({"metadata": {"labels": {self.label.clone(): value}}});
        self.nodes
            .patch(&self.node, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }
}

impl Rejector {
    /// Flaps the node label until `running` clears: pods the kubelet admits while it is
    /// off are rejected. Off about a fifth of the time, in uneven spells so that
    /// re-creations after a fixed backoff do not fall in step. Returns the spells; the
    /// label is left on.
    pub async fn flap(&self, running: Arc<AtomicBool>) -> anyhow::Result<u32> {
        let mut spells = 0;
        while running.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(fastrand::u64(2000..6000))).await;
            self.reject().await?;
            spells += 1;
            tokio::time::sleep(Duration::from_millis(fastrand::u64(500..1500))).await;
            self.admit().await?;
        }
        Ok(spells)
    }
}

/// A workspace whose pod sleeps (and ends at once on SIGTERM), bound to the node under
/// `rejector`, with tiny requests so that a hundred fit on one node.
pub fn sleeping_workspace(name: &str, rejector: &Rejector) -> anyhow::Result<Workspace> {
    crate::workspace(name)
        .pod_labels(json!({"team": "e2e"}))
        .small_requests()
        .pod_spec(rejector.pod_spec_fields())
        .build()
}

/// Waits until each of the `n` Workspaces in `workspaces`' namespace has recorded a
/// rejection (`status.lastRejection`); returns them as they were then.
pub async fn every_workspace_rejected(
    workspaces: &Api<Workspace>,
    n: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Workspace>> {
    crate::poll_until("every workspace rejected once", timeout, || async move {
        let list = workspaces.list(&ListParams::default()).await?.items;
        let rejected = list
            .iter()
            .filter(|w| {
                w.status
                    .as_ref()
                    .is_some_and(|s| s.last_rejection.is_some())
            })
            .count();
        Ok((rejected == n).then_some(list))
    })
    .await
}
