//! The local cluster's node commands (`cluster/lifeguard-cluster node ...`), for tests that
//! lose a node or restart its kubelet.

use std::process::Command;

use anyhow::{Context as _, ensure};

/// The second node of `./local-up`'s two; the first runs the control plane.
pub const SECOND_NODE: &str = "lifeguard-node-2";

/// Runs `cluster/lifeguard-cluster ARGS...`; fails with its output if it fails.
pub fn lifeguard_cluster(args: &[&str]) -> anyhow::Result<()> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../cluster/lifeguard-cluster");
    let out = Command::new(script)
        .args(args)
        .output()
        .with_context(|| format!("running lifeguard-cluster {args:?}"))?;
    ensure!(
        out.status.success(),
        "lifeguard-cluster {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// A node whose kubelet (and, from `stop`, its container runtime) is stopped until this is
/// dropped; dropping starts them again, also when the test fails.
pub struct StoppedNode {
    name: String,
    started: bool,
}

impl StoppedNode {
    pub fn stop(name: &str) -> anyhow::Result<Self> {
        lifeguard_cluster(&["node", "stop", name])?;
        Ok(Self {
            name: name.to_string(),
            started: false,
        })
    }

    /// Stops only the node's kubelet, as a kubelet upgrade or crash does: its containers
    /// (a webhook replica among them) keep running and serving, and the cluster still sees
    /// the node Ready for about 40 s.
    pub fn stop_kubelet(name: &str) -> anyhow::Result<Self> {
        lifeguard_cluster(&["node", "stop-kubelet", name])?;
        Ok(Self {
            name: name.to_string(),
            started: false,
        })
    }

    /// Starts the node again now (a fresh kubelet, as after a node restart).
    pub fn start(mut self) -> anyhow::Result<()> {
        self.started = true;
        lifeguard_cluster(&["node", "start", &self.name])
    }
}

impl Drop for StoppedNode {
    fn drop(&mut self) {
        if self.started {
            return;
        }
        if let Err(e) = lifeguard_cluster(&["node", "start", &self.name]) {
            eprintln!("warning: could not start {} again: {e:#}", self.name);
        }
    }
}

/// Waits until every node is Ready, every pod of lifeguard is Ready and no earlier test's
/// namespace is still being torn down: a disruptive test starts from a settled cluster,
/// whatever the test before it stopped or restarted. (A kubelet restarted while a pod of
/// a namespace being deleted terminates can find the pod's secret gone; the kubelet of
/// Kubernetes 1.20 then never finishes that pod, and its namespace never goes.)
pub async fn wait_settled(client: &kube::Client) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Node, Pod};
    use kube::Api;

    fn ready(conditions: Option<&Vec<(String, String)>>) -> bool {
        conditions.is_some_and(|cs| cs.iter().any(|(t, s)| t == "Ready" && s == "True"))
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), crate::LIFEGUARD_NAMESPACE);
    crate::poll_until(
        "every node and lifeguard pod Ready, no test namespace going",
        std::time::Duration::from_secs(180),
        || async {
            let mut waiting = Vec::new();
            for node in nodes.list(&Default::default()).await?.items {
                let conditions = node.status.and_then(|s| s.conditions).map(|cs| {
                    cs.into_iter()
                        .map(|c| (c.type_, c.status))
                        .collect::<Vec<_>>()
                });
                if !ready(conditions.as_ref()) {
                    waiting.push(format!("node {:?}", node.metadata.name));
                }
            }
            for pod in pods.list(&Default::default()).await?.items {
                let conditions = pod.status.and_then(|s| s.conditions).map(|cs| {
                    cs.into_iter()
                        .map(|c| (c.type_, c.status))
                        .collect::<Vec<_>>()
                });
                if pod.metadata.deletion_timestamp.is_some() || !ready(conditions.as_ref()) {
                    waiting.push(format!("pod {:?}", pod.metadata.name));
                }
            }
            let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
            let params = kube::api::ListParams::default().labels(crate::E2E_NAMESPACE_LABEL);
            for ns in namespaces.list(&params).await?.items {
                if ns.metadata.deletion_timestamp.is_some() {
                    waiting.push(format!("namespace {:?} going", ns.metadata.name));
                }
            }
            if waiting.is_empty() {
                Ok(Some(()))
            } else {
                anyhow::bail!("not Ready yet: {}", waiting.join(", "))
            }
        },
    )
    .await
}
