//! Unproven nodes take no workspaces (issue 22): a node registers with the
//! `lifeguard.dev/unproven` NoSchedule taint and label (the local kubelets run with
//! `--register-with-taints` and `--node-labels`), and its prober removes both on its first
//! healthy verdict. Disruptive: the second node's Node object is deleted and its kubelet
//! restarted, so it registers again as a new node does. docs/prober.md ("Unproven nodes").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::ensure;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Node};
use kube::api::{Api, DeleteParams, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use lifeguard_api::names::NODE_UNPROVEN_KEY;
use lifeguard_e2e::{
    SECOND_NODE, StoppedNode, client, poll_until, wait_for, wait_gone, wait_settled,
};

fn unproven(node: &Node) -> bool {
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t.key == NODE_UNPROVEN_KEY && t.effect == "NoSchedule")
        });
    let labelled = node
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(NODE_UNPROVEN_KEY));
    tainted && labelled
}

#[tokio::test]
#[ignore = "disruptive: deletes a Node and restarts its kubelet; test-all runs it alone"]
async fn a_node_that_registers_is_unproven_until_its_prober_says_healthy() -> anyhow::Result<()> {
    let client = client().await?;
    wait_settled(&client).await?;
    let nodes: Api<Node> = Api::all(client.clone());
    // Every version of the Node seen from its registration on.
    let seen_unproven = Arc::new(AtomicBool::new(false));
    let seen = seen_unproven.clone();
    let config = watcher::Config::default().fields(&format!("metadata.name={SECOND_NODE}"));
    let mut stream = watcher(nodes.clone(), config).applied_objects().boxed();
    let watch = tokio::spawn(async move {
        while let Some(Ok(node)) = stream.next().await {
            if unproven(&node) {
                seen.store(true, Ordering::Release);
            }
        }
    });

    let stopped = StoppedNode::stop_kubelet(SECOND_NODE)?;
    nodes.delete(SECOND_NODE, &DeleteParams::default()).await?;
    wait_gone(&nodes, SECOND_NODE, Duration::from_secs(60)).await?;
    stopped.start()?;
    let registered = std::time::Instant::now();
    let nodes_ref = &nodes;
    poll_until(
        "the node registered again",
        Duration::from_secs(60),
        || async move { Ok(nodes_ref.get_opt(SECOND_NODE).await?.map(|_| ())) },
    )
    .await?;
    wait_for(
        &nodes,
        SECOND_NODE,
        Duration::from_secs(150),
        "proven (taint and label gone)",
        |n| !unproven(n),
    )
    .await?;
    println!(
        "unproven taint removed {:?} after registration",
        registered.elapsed()
    );
    watch.abort();
    ensure!(
        seen_unproven.load(Ordering::Acquire),
        "the node never showed the unproven taint and label: the kubelet did not register with them"
    );
    // The prober's Node Events go to kube-system (a Node has no namespace).
    let events: Api<Event> = Api::all(client.clone());
    let proven = events
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .any(|e| {
            e.reason.as_deref() == Some("NodeProven")
                && e.involved_object.name.as_deref() == Some(SECOND_NODE)
        });
    ensure!(proven, "no NodeProven Event about {SECOND_NODE}");
    wait_settled(&client).await?;
    Ok(())
}
