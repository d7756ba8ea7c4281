//! A node is lost while workspaces run on it (`lifeguard-cluster node stop`), then comes
//! back (`node start`). Disruptive: one webhook replica, maybe the controller leader and a
//! prober go down with the node, so `test-all` runs it alone with the other #[ignore]d
//! tests. The behaviour is documented in docs/controller.md ("A lost node").
//!
//! Needs the local overlay's `--node-lost-after=20s` and `--disposal-timeout=30s`.

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::names::POD_FINALIZER;
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    SECOND_NODE, StoppedNode, poll_until, wait_for, wait_gone, wait_settled, wait_workspace_events,
    with_namespace, workspace,
};
use serde_json::json;

const LOST_NODE: &str = SECOND_NODE;
/// Kubernetes marks a silent node after 40 s; lifeguard says NodeLost 20 s later.
const LOST_WITHIN: Duration = Duration::from_secs(150);
const DISPOSAL_TIMEOUT: Duration = Duration::from_secs(30);
const TIMEOUT: Duration = Duration::from_secs(120);

fn on_lost_node(name: &str) -> anyhow::Result<Workspace> {
    workspace(name)
        .pod_labels(json!({"team": "e2e"}))
        .pod_spec(json!({"nodeSelector": {"kubernetes.io/hostname": LOST_NODE}}))
        .small_requests()
        .build()
}

fn node_lost(ws: &Workspace) -> Option<(String, String)> {
    ws.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == condition::NODE_LOST)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

fn running(ws: &Workspace) -> bool {
    ws.status
        .as_ref()
        .is_some_and(|s| s.phase == Some(WorkspacePhase::Running))
}

async fn finalizer_released(pods: &Api<Pod>, pod: &str) -> anyhow::Result<bool> {
    Ok(pods
        .get_opt(pod)
        .await?
        .is_none_or(|p| !p.finalizers().iter().any(|f| f == POD_FINALIZER)))
}

#[tokio::test]
#[ignore = "disruptive: stops a node; test-all runs it alone"]
async fn a_lost_node_is_reported_never_keeps_a_pod_and_its_workspaces_recover_or_stop() {
    with_namespace("node-loss", |client: Client, ns| async move {
        wait_settled(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        // `stays` is kept through the loss and must recover; `leaves` is deleted while the
        // node is lost and must be stopped cleanly.
        for name in ["stays", "leaves"] {
            workspaces
                .create(&PostParams::default(), &on_lost_node(name)?)
                .await?;
        }
        for name in ["stays", "leaves"] {
            wait_for(&workspaces, name, TIMEOUT, "Running", running).await?;
        }

        let stopped = StoppedNode::stop(LOST_NODE)?;
        let started = std::time::Instant::now();
        for name in ["stays", "leaves"] {
            wait_for(&workspaces, name, LOST_WITHIN, "NodeLost=True", |ws| {
                node_lost(ws).is_some_and(|(s, r)| s == "True" && r == "NodeNotReady")
            })
            .await?;
            wait_workspace_events(&client, &ns, name, &["NodeLost"]).await?;
        }
        println!(
            "NodeLost reported {:?} after the node stopped",
            started.elapsed()
        );

        // Deleting a workspace whose node is gone: its pod cannot report that its
        // containers stopped, and lifeguard's finalizer goes at the disposal timeout.
        let leaving_pod = workspaces
            .get("leaves")
            .await?
            .status
            .and_then(|s| s.pod_name)
            .context("leaves has no pod")?;
        workspaces
            .delete("leaves", &DeleteParams::default())
            .await?;
        let pods_ref = &pods;
        let leaving_pod = &leaving_pod;
        poll_until(
            "lifeguard's finalizer released from the lost node's pod",
            DISPOSAL_TIMEOUT + Duration::from_secs(45),
            || async move {
                Ok(finalizer_released(pods_ref, leaving_pod)
                    .await?
                    .then_some(()))
            },
        )
        .await?;

        drop(stopped); // the node comes back
        wait_for(&workspaces, "stays", TIMEOUT, "recovered", |ws| {
            running(ws) && node_lost(ws).is_some_and(|(s, r)| s == "False" && r == "NodeReady")
        })
        .await?;
        wait_workspace_events(&client, &ns, "stays", &["NodeRecovered"]).await?;
        // The deleted one is stopped cleanly: its pod and the Workspace are gone.
        wait_gone(&pods, leaving_pod, TIMEOUT).await?;
        wait_gone(&workspaces, "leaves", TIMEOUT).await?;
        Ok(())
    })
    .await;
}
