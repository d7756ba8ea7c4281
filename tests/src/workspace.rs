//! The one Workspace the e2e tests start from: a busybox `ide` container that sleeps and
//! leaves at once on SIGTERM, with a 1 s grace period, so that stopping never waits. Each
//! test adds what it is about; every addition extends one part at its top level.

use lifeguard_api::Workspace;
use serde_json::{Map, Value, json};

use crate::BUSYBOX_IMAGE;

/// The command of the `ide` container: sleep, and exit 0 on SIGTERM.
pub const SLEEP_COMMAND: &str = "trap 'exit 0' TERM; sleep 3600 & wait";

/// `workspace(name)`: see the module documentation.
#[derive(Debug, Clone)]
pub struct WorkspaceBuilder {
    name: String,
    labels: Option<Map<String, Value>>,
    spec: Map<String, Value>,
    pod_labels: Option<Value>,
    pod_spec: Map<String, Value>,
    ide: Map<String, Value>,
}

pub fn workspace(name: &str) -> WorkspaceBuilder {
    let object = |v: Value| match v {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    WorkspaceBuilder {
        name: name.to_string(),
        labels: None,
        spec: Map::new(),
        pod_labels: None,
        pod_spec: object(json!({"terminationGracePeriodSeconds": 1})),
        ide: object(json!({
            "name": "ide", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
            "command": ["sh", "-c", SLEEP_COMMAND],
        })),
    }
}

/// `from`'s fields over `into`'s (a `from` that is not an object adds nothing).
fn extend(into: &mut Map<String, Value>, from: Value) {
    if let Value::Object(from) = from {
        into.extend(from);
    }
}

impl WorkspaceBuilder {
    /// Labels of the Workspace itself (what a window's `workspaceSelector` matches).
    pub fn labels(mut self, labels: Value) -> Self {
        extend(self.labels.get_or_insert_with(Map::new), labels);
        self
    }

    /// Fields of the Workspace's spec beside `podTemplate` (`confirmDisposal`, say).
    pub fn spec(mut self, fields: Value) -> Self {
        extend(&mut self.spec, fields);
        self
    }

    /// The pod template's labels.
    pub fn pod_labels(mut self, labels: Value) -> Self {
        self.pod_labels = Some(labels);
        self
    }

    /// Fields of the pod spec (`nodeSelector`, `affinity`, `volumes`, ...).
    pub fn pod_spec(mut self, fields: Value) -> Self {
        extend(&mut self.pod_spec, fields);
        self
    }

    /// Fields of the `ide` container (`command`, `ports`, `resources`, ...).
    pub fn ide(mut self, fields: Value) -> Self {
        extend(&mut self.ide, fields);
        self
    }

    /// Requests small enough that many such pods fit on one local node.
    pub fn small_requests(self) -> Self {
        self.ide(json!({"resources": {"requests": {"cpu": "1m", "memory": "4Mi"}}}))
    }

    /// The JSON the Workspace is built from.
    pub fn to_json(&self) -> Value {
        let mut pod_spec = self.pod_spec.clone();
        pod_spec.insert("containers".into(), json!([self.ide]));
        let mut template = json!({"spec": pod_spec});
        if let Some(labels) = &self.pod_labels {
            template["metadata"] = json!({"labels": labels});
        }
        let mut spec = self.spec.clone();
        spec.insert("podTemplate".into(), template);
        let mut metadata = json!({"name": self.name});
        if let Some(labels) = &self.labels {
            metadata["labels"] = json!(labels);
        }
        json!({"metadata": metadata, "spec": spec})
    }

    pub fn build(&self) -> anyhow::Result<Workspace> {
        Ok(serde_json::from_value(self.to_json())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additions_extend_each_part_at_its_top_level() {
        let built = workspace("alice")
            .labels(json!({"tier": "free"}))
            .spec(json!({"confirmDisposal": true}))
            .pod_labels(json!({"team": "e2e"}))
            .pod_spec(json!({"nodeName": "n1"}))
            .small_requests()
            .ide(json!({"command": ["true"]}))
            .to_json();
        assert_eq!(
            built,
            json!({
                "metadata": {"name": "alice", "labels": {"tier": "free"}},
                "spec": {"confirmDisposal": true, "podTemplate": {
                    "metadata": {"labels": {"team": "e2e"}},
                    "spec": {"terminationGracePeriodSeconds": 1, "nodeName": "n1",
                        "containers": [{"name": "ide", "image": BUSYBOX_IMAGE,
                            "imagePullPolicy": "Never", "command": ["true"],
                            "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}}}]}}}
            })
        );
        let plain = workspace("bob").to_json();
        assert_eq!(plain["metadata"], json!({"name": "bob"}));
        assert_eq!(
            plain["spec"]["podTemplate"]["spec"]["containers"][0]["command"],
            json!(["sh", "-c", SLEEP_COMMAND])
        );
    }
}
