//! The "rejector": makes the real kubelet reject workspace pods after scheduling, the way
//! out-of-sync node labels do in production. Workspaces under test are pinned to the node
//! and select a label unique to the test; removing that label from the node makes the
//! kubelet's admission check fail (reason NodeAffinity), restoring it lets pods in.

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
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
