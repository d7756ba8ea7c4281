//! What only a cluster of several nodes shows (`./local-up` brings up two): a broken node
//! is told apart from a healthy one and new workspaces are steered away from it, and the
//! webhook's replicas do not share a node.

use lifeguard_e2e::prober as support;

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_e2e::{Component, poll_until, ready_pods, with_namespace, workspace};
use serde_json::json;
use support::{PROBED_NODE, ReadOnlyStorage, cluster_lock, healthy_start, tainted};

const TIMEOUT: Duration = Duration::from_secs(90);

async fn local_nodes(client: &Client) -> anyhow::Result<Vec<Node>> {
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default().labels("lifeguard.dev/local-cluster=true"))
        .await?;
    anyhow::ensure!(
        list.items.len() >= 2,
        "these tests need two nodes (./local-up brings them up; LIFEGUARD_NODES=1 does not)"
    );
    Ok(list.items)
}

/// A workspace the scheduler places freely: no node, no affinity.
fn unpinned_workspace(name: &str) -> anyhow::Result<Workspace> {
    workspace(name)
        .pod_labels(json!({"team": "e2e"}))
        .small_requests()
        .build()
}

#[tokio::test]
async fn a_node_with_broken_storage_alone_is_tainted_and_new_workspaces_land_elsewhere() {
    // Exclusive: the probed node is tainted for a while.
    let _lock = cluster_lock(true).expect("cluster lock");
    with_namespace("nodes-steer", |client, ns| async move {
        let nodes = local_nodes(&client).await?;
        healthy_start(&client).await?;
        let broken = ReadOnlyStorage::new()?;
        let api: Api<Node> = Api::all(client.clone());
        let api = &api;
        let healthy: Vec<String> = nodes
            .iter()
            .map(|n| n.name_any())
            .filter(|n| n != PROBED_NODE)
            .collect();
        let healthy = &healthy;
        poll_until(
            &format!("{PROBED_NODE} tainted, the other nodes not"),
            TIMEOUT,
            || async move {
                if !tainted(&api.get(PROBED_NODE).await?) {
                    return Ok(None);
                }
                for name in healthy {
                    anyhow::ensure!(
                        !tainted(&api.get(name).await?),
                        "{name} was tainted though only {PROBED_NODE}'s storage is broken"
                    );
                }
                Ok(Some(()))
            },
        )
        .await?;

        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let names = ["steered-1", "steered-2", "steered-3"];
        for name in names {
            workspaces
                .create(&PostParams::default(), &unpinned_workspace(name)?)
                .await?;
        }
        for name in names {
            let (workspaces, pods) = (&workspaces, &pods);
            let node = poll_until(&format!("{name}'s pod scheduled"), TIMEOUT, || async move {
                let ws = workspaces.get(name).await?;
                let Some(pod) = ws.status.and_then(|s| s.pod_name) else {
                    return Ok(None);
                };
                Ok(pods
                    .get_opt(&pod)
                    .await?
                    .and_then(|p| p.spec.and_then(|s| s.node_name)))
            })
            .await?;
            anyhow::ensure!(
                node != PROBED_NODE,
                "{name} was scheduled onto the tainted node {node}"
            );
        }
        drop(broken);
        poll_until(
            &format!("{PROBED_NODE} untainted"),
            TIMEOUT,
            || async move { Ok((!tainted(&api.get(PROBED_NODE).await?)).then_some(())) },
        )
        .await
    })
    .await;
}

#[tokio::test]
async fn the_webhook_replicas_run_on_different_nodes() {
    let _lock = cluster_lock(false).expect("cluster lock");
    let client = lifeguard_e2e::client().await.expect("cluster");
    local_nodes(&client).await.expect("two nodes");
    let spread = poll_until("webhook replicas on two nodes", TIMEOUT, || {
        let client = client.clone();
        async move {
            let pods = ready_pods(&client, Component::Webhook).await?;
            let nodes: BTreeSet<String> = pods
                .iter()
                .filter_map(|p| p.spec.as_ref()?.node_name.clone())
                .collect();
            Ok((pods.len() == 2 && nodes.len() == 2).then_some(nodes))
        }
    })
    .await
    .expect("spread");
    println!("webhook replicas on {spread:?}");
}

/// Nodes that exist only as API objects (no kubelet), carrying lifeguard's taint: to the
/// probers they are the rest of a fleet that is already mostly tainted.
async fn tainted_ghost_nodes(nodes: &Api<Node>, names: &[String]) -> anyhow::Result<()> {
    for name in names {
        let ghost: Node = serde_json::from_value(json!({
            // Taint and label, as a prober marks its node (the guard counts the label).
            "metadata": {"name": name, "labels": {"lifeguard.dev/e2e-ghost": "true",
                                                  support::TAINT: "probes-failing"}},
            "spec": {"taints": [{"key": support::TAINT, "value": "probes-failing",
                                 "effect": "NoSchedule"}]}
        }))?;
        nodes.create(&PostParams::default(), &ghost).await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_prober_holds_its_taint_back_while_most_of_the_fleet_is_tainted() {
    // Exclusive: the probed node becomes unhealthy (and tainted at the end).
    let _lock = cluster_lock(true).expect("cluster lock");
    with_namespace("nodes-fleet", |client, _ns| async move {
        local_nodes(&client).await?;
        healthy_start(&client).await?;
        let nodes: Api<Node> = Api::all(client.clone());
        let all = nodes.list(&ListParams::default()).await?.items.len();
        // Past --max-tainted-share (0.5): more than half of all nodes tainted, not counting
        // the probed one.
        let ghosts: Vec<String> = (1..=all + 1)
            .map(|i| format!("{}-{i}", lifeguard_e2e::unique_name("e2e-ghost")))
            .collect();
        let outcome = async {
            tainted_ghost_nodes(&nodes, &ghosts).await?;
            let broken = ReadOnlyStorage::new()?;
            let held = poll_until("unhealthy, taint held back", TIMEOUT, || async {
                let node = support::node(&client).await?;
                let unhealthy =
                    support::condition(&node).is_some_and(|(status, _, _)| status == "False");
                let held = support::metric("lifeguard_prober_taint_held_back")? == 1.0;
                // Read after the metric: /status read first may still show the look before.
                let s = support::status()?;
                Ok((unhealthy && held).then_some((s, node)))
            })
            .await?;
            let (status, node) = held;
            anyhow::ensure!(
                !tainted(&node),
                "{PROBED_NODE} was tainted though the fleet is"
            );
            anyhow::ensure!(
                status.to_string().contains("taint held back"),
                "/status says why: {status}"
            );
            // The fleet recovers: the next look taints the one node still broken.
            for ghost in &ghosts {
                nodes.delete(ghost, &Default::default()).await?;
            }
            support::wait_node(
                &client,
                "tainted once the fleet is healthy",
                TIMEOUT,
                tainted,
            )
            .await?;
            drop(broken);
            support::wait_node(&client, "untainted", TIMEOUT, |n| !tainted(n)).await?;
            Ok(())
        }
        .await;
        for ghost in &ghosts {
            let _ = nodes.delete(ghost, &Default::default()).await;
        }
        outcome
    })
    .await;
}
