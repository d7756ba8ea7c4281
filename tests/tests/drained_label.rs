//! `lifeguard.dev/drained=true` on a Node is a promise an upgrade tool acts on: nothing
//! lifeguard looks after is left there. On node 2 of the local cluster, with node-scoped
//! windows over a test namespace:
//! - a Workspace deleted while its pod waits for the backup agent no longer counts as the
//!   window's, but its pod is still being saved: the node is not drained until it is
//!   released;
//! - of two windows selecting the node, the one whose label it carries waits until the other
//!   has nothing left there either.
//!
//! Disruptive (#[ignore]): a node's label is shared by every window that selects it, so
//! these run alone, after the parallel tests.

use std::time::Duration;

use anyhow::Context as _;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::maintenance::{MaintenanceWindow, NodeDrainStatus};
use lifeguard_api::names::{
    DISPOSAL_RESULT_ANNOTATION, NODE_DRAINED_LABEL, NODE_WINDOW_ANNOTATION, POD_FINALIZER, pod_name,
};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    NAMESPACE_LABEL, SECOND_NODE, close_window, poll_until, rfc3339, unique_name, wait_for,
    wait_phase, with_namespace, workspace,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

/// A workspace on node 2 labelled `team`; with `held`, its stop waits for a backup agent
/// that only this test plays (no stand-in label), so its pod stays held until answered.
fn on_node_2(name: &str, team: &str, held: bool) -> anyhow::Result<Workspace> {
    workspace(name)
        .labels(json!({"team": team}))
        .spec(json!({"confirmDisposal": held}))
        .pod_spec(json!({"nodeSelector": {"kubernetes.io/hostname": SECOND_NODE}}))
        .small_requests()
        .build()
}

async fn start(api: &Api<Workspace>, ws: Workspace) -> anyhow::Result<()> {
    let name = ws.metadata.name.clone().unwrap_or_default();
    api.create(&PostParams::default(), &ws).await?;
    wait_phase(api, &name, WorkspacePhase::Running, TIMEOUT).await?;
    Ok(())
}

/// An open node-scoped draining window on node 2 over the `team` workspaces of `ns`.
async fn node_2_window(client: &Client, ns: &str, team: &str) -> anyhow::Result<String> {
    let name = unique_name("e2e-drained");
    let now = Timestamp::now();
    let window: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "start": rfc3339(now - SignedDuration::from_secs(60)),
            "end": rfc3339(now + SignedDuration::from_mins(30)),
            "drain": true,
            "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": SECOND_NODE}},
            "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}},
            "workspaceSelector": {"matchLabels": {"team": team}},
        }
    }))?;
    Api::<MaintenanceWindow>::all(client.clone())
        .create(&PostParams::default(), &window)
        .await?;
    Ok(name)
}

fn node_2_status(w: &MaintenanceWindow) -> Option<&NodeDrainStatus> {
    w.status
        .as_ref()?
        .nodes
        .iter()
        .find(|n| n.node == SECOND_NODE)
}

/// Waits until window `name`'s status says `remaining` and reports node 2; returns that
/// node's entry.
async fn wait_reported(
    client: &Client,
    name: &str,
    remaining: u32,
) -> anyhow::Result<NodeDrainStatus> {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let w = wait_for(
        &windows,
        name,
        TIMEOUT,
        &format!("{remaining} remaining, node 2 reported"),
        |w| {
            w.status.as_ref().and_then(|s| s.workspaces_remaining) == Some(remaining)
                && node_2_status(w).is_some()
        },
    )
    .await?;
    node_2_status(&w).cloned().context("node 2 reported")
}

/// Node 2's drained label and the window its annotation names.
async fn node_2_label(client: &Client) -> anyhow::Result<(Option<String>, Option<String>)> {
    let node = Api::<Node>::all(client.clone()).get(SECOND_NODE).await?;
    let get = |map: &Option<std::collections::BTreeMap<String, String>>, key: &str| {
        map.as_ref().and_then(|m| m.get(key)).cloned()
    };
    Ok((
        get(&node.metadata.labels, NODE_DRAINED_LABEL),
        get(&node.metadata.annotations, NODE_WINDOW_ANNOTATION),
    ))
}

async fn wait_node_2_drained_by(client: &Client, window: &str) -> anyhow::Result<()> {
    poll_until("node 2 labelled drained", TIMEOUT, || async {
        let label = node_2_label(client).await?;
        Ok((label == (Some("true".into()), Some(window.to_string()))).then_some(()))
    })
    .await
}

/// Waits until workspace `name`'s pod is being deleted and still held for its agent.
async fn wait_held(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    wait_for(&pods, &pod_name(name), TIMEOUT, "held while saved", |p| {
        p.metadata.deletion_timestamp.is_some()
            && p.metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == POD_FINALIZER)
    })
    .await?;
    Ok(())
}

/// Answers for the backup agent: `name`'s work is saved (as an administrator, whom the
/// answers policy lets).
async fn answer_saved(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"annotations": {DISPOSAL_RESULT_ANNOTATION: "saved"}}});
    Api::<Pod>::namespaced(client.clone(), ns)
        .patch(
            &pod_name(name),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

async fn wait_label_cleared(client: &Client) -> anyhow::Result<()> {
    poll_until("node 2's drained label cleared", TIMEOUT, || async {
        Ok((node_2_label(client).await? == (None, None)).then_some(()))
    })
    .await
}

#[tokio::test]
#[ignore = "disruptive: labels node 2; test-all runs it alone"]
async fn a_pod_still_being_saved_keeps_its_node_from_being_drained() {
    with_namespace("drained-deleted", |client, ns| async move {
        let api: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        start(&api, on_node_2("held", "a", true)?).await?;
        start(&api, on_node_2("quick", "a", false)?).await?;
        let window = node_2_window(&client, &ns, "a").await?;
        let outcome = async {
            wait_held(&client, &ns, "held").await?;
            api.delete("held", &DeleteParams::default()).await?;
            wait_phase(&api, "quick", WorkspacePhase::Stopped, TIMEOUT).await?;
            // The deleted Workspace is no longer the window's and "quick" is done: nothing
            // covered is left, yet "held"'s pod is still being saved on node 2.
            let node = wait_reported(&client, &window, 0).await?;
            let label = node_2_label(&client).await?;
            anyhow::ensure!(
                node.workspaces_left == 1 && !node.drained && label.0.as_deref() == Some("false"),
                "node 2 while a pod is still saved: {node:?}, label {label:?}"
            );
            answer_saved(&client, &ns, "held").await?;
            wait_node_2_drained_by(&client, &window).await
        }
        .await;
        close_window(&client, &window).await;
        outcome?;
        wait_label_cleared(&client).await
    })
    .await;
}

#[tokio::test]
#[ignore = "disruptive: labels node 2; test-all runs it alone"]
async fn a_node_two_windows_drain_is_drained_only_when_both_are_done() {
    with_namespace("drained-two", |client, ns| async move {
        let api: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        start(&api, on_node_2("first", "a", true)?).await?;
        start(&api, on_node_2("second", "b", true)?).await?;
        let first = node_2_window(&client, &ns, "a").await?;
        let outcome = async {
            // The first window labels node 2 (not drained: "first" is held until this
            // test answers) before the second exists: the label is the first's.
            wait_held(&client, &ns, "first").await?;
            poll_until("node 2 labelled by the first window", TIMEOUT, || async {
                let label = node_2_label(&client).await?;
                Ok((label.1.as_deref() == Some(first.as_str())).then_some(()))
            })
            .await?;
            let second = node_2_window(&client, &ns, "b").await?;
            let outcome = async {
                wait_held(&client, &ns, "second").await?;
                let _ = wait_reported(&client, &second, 1).await?;
                answer_saved(&client, &ns, "first").await?;
                wait_phase(&api, "first", WorkspacePhase::Stopped, TIMEOUT).await?;
                let others = wait_reported(&client, &second, 1).await?;
                let own = wait_reported(&client, &first, 0).await?;
                let label = node_2_label(&client).await?;
                anyhow::ensure!(
                    own.workspaces_left == 0
                        && !own.drained
                        && others.workspaces_left == 1
                        && label.0.as_deref() == Some("false"),
                    "node 2 while the second window drains it: first {own:?}, second \
                     {others:?}, label {label:?}"
                );
                answer_saved(&client, &ns, "second").await?;
                wait_node_2_drained_by(&client, &first).await
            }
            .await;
            close_window(&client, &second).await;
            outcome
        }
        .await;
        close_window(&client, &first).await;
        outcome?;
        wait_label_cleared(&client).await
    })
    .await;
}
