//! Continuous admissions through the API server, for tests that change the webhook
//! (certificate rotation, rolling updates) and must show that no admission failed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::names::POD_FINALIZER;
use lifeguard_api::workspace::Workspace;
use serde_json::json;

use crate::cluster::BUSYBOX_IMAGE;

/// Senders of dry-run creates, each a workspace pod (both webhooks: the mutating one must
/// stamp the finalizer) and a Workspace (validation). Dry runs pass through admission and
/// leave nothing behind.
pub struct Admissions {
    stop: Arc<AtomicBool>,
    admitted: Arc<AtomicU64>,
    senders: Vec<tokio::task::JoinHandle<anyhow::Result<Vec<String>>>>,
}

impl Admissions {
    pub fn start(client: &Client, ns: &str, senders: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let admitted = Arc::new(AtomicU64::new(0));
        let senders = (0..senders)
            .map(|sender| {
                let (client, ns) = (client.clone(), ns.to_string());
                let (stop, admitted) = (stop.clone(), admitted.clone());
                tokio::spawn(async move { send(client, ns, sender, stop, admitted).await })
            })
            .collect();
        Self {
            stop,
            admitted,
            senders,
        }
    }

    /// Stops the senders; (admissions made, every failure seen).
    pub async fn finish(self) -> anyhow::Result<(u64, Vec<String>)> {
        self.stop.store(true, Ordering::Relaxed);
        let mut failures = Vec::new();
        for sender in self.senders {
            failures.extend(sender.await??);
        }
        Ok((self.admitted.load(Ordering::Relaxed), failures))
    }
}

async fn send(
    client: Client,
    ns: String,
    sender: u32,
    stop: Arc<AtomicBool>,
    admitted: Arc<AtomicU64>,
) -> anyhow::Result<Vec<String>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let workspaces: Api<Workspace> = Api::namespaced(client, &ns);
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let mut failures = Vec::new();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("ws-{sender}-{i}"), "labels": {"lifeguard.dev/workspace": "w"}},
            "spec": {"nodeName": "e2e-nowhere", "containers": [{"name": "c", "image": BUSYBOX_IMAGE}]}
        }))?;
        match pods.create(&dry_run, &pod).await {
            Ok(p) if p.finalizers().iter().any(|f| f == POD_FINALIZER) => {}
            Ok(_) => failures.push("pod admitted without the finalizer".to_string()),
            Err(e) => failures.push(format!("pod: {e}")),
        }
        let ws = crate::workspace(&format!("w-{sender}-{i}")).build()?;
        if let Err(e) = workspaces.create(&dry_run, &ws).await {
            failures.push(format!("workspace: {e}"));
        }
        admitted.fetch_add(2, Ordering::Relaxed);
    }
    Ok(failures)
}
