//! A workspace pod evicted through the Eviction API (what `kubectl drain` and node upgrade
//! tools do): its workspace says so in the cluster's own words, the pod's
//! `DisruptionTarget` condition (`EvictionByEvictionAPI`), while it stops and once stopped.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, EvictParams, PostParams};
use lifeguard_api::names::pod_name;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{wait_phase, with_namespace, workspace};

const TIMEOUT: Duration = Duration::from_secs(120);

#[tokio::test]
async fn an_evicted_workspace_names_the_eviction() {
    with_namespace("evicted", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let ws = workspace("ev").small_requests().build()?;
        workspaces.create(&PostParams::default(), &ws).await?;
        wait_phase(&workspaces, "ev", WorkspacePhase::Running, TIMEOUT).await?;
        pods.evict(&pod_name("ev"), &EvictParams::default()).await?;
        let stopped = wait_phase(&workspaces, "ev", WorkspacePhase::Stopped, TIMEOUT).await?;
        let ready = stopped
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no Ready condition"))?;
        anyhow::ensure!(
            ready.reason == "EvictionByEvictionAPI",
            "Ready says {}: {}",
            ready.reason,
            ready.message
        );
        Ok(())
    })
    .await;
}
