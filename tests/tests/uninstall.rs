//! Uninstalling with exactly the commands `docs/operations.md` gives leaves no Workspace or
//! pod stuck on a lifeguard finalizer and no lifeguard condition or taint on any Node; then
//! `./local-up` installs lifeguard again for whatever runs next. Disruptive: `test-all`
//! runs it alone with the other #[ignore]d tests.

use std::time::Duration;

use anyhow::ensure;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_api::names::{NODE_CONDITION, NODE_TAINT_KEY, POD_FINALIZER, WORKSPACE_FINALIZER};
use lifeguard_e2e::{
    apply_crds, client, documented_block, poll_until, repo_script, run_documented, unique_name,
    wait_settled, workspace,
};
use serde_json::json;

async fn a_running_workspace(client: &Client, ns: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let ws = workspace("kept").build()?;
    workspaces.create(&PostParams::default(), &ws).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pods = &pods;
    poll_until(
        "the workspace pod runs with lifeguard's finalizer",
        Duration::from_secs(90),
        || async move {
            let pod = pods.get_opt("ws-kept").await?;
            let running = pod.as_ref().is_some_and(|p| {
                p.finalizers().iter().any(|f| f == POD_FINALIZER)
                    && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            });
            Ok(running.then_some(()))
        },
    )
    .await
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn the_documented_uninstall_leaves_nothing_stuck_and_local_up_reinstalls()
-> anyhow::Result<()> {
    let client = client().await?;
    wait_settled(&client).await?;
    apply_crds(&client).await?;
    let ns = unique_name("e2e-uninstall");
    a_running_workspace(&client, &ns).await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let conditioned = nodes
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .any(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == NODE_CONDITION))
        });
    ensure!(conditioned, "before: the prober reports on its node");

    let kustomization = "/var/lib/lifeguard-cluster/install";
    let uninstalled = run_documented(
        &documented_block("### Uninstall")?,
        &[("KUSTOMIZATION", kustomization)],
        env!("CARGO_BIN_EXE_lifeguard-cli"),
    );

    // What is left, before anything is reinstalled.
    let pods: Api<Pod> = Api::all(client.clone());
    let stuck_pods: Vec<String> = pods
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|p| p.finalizers().iter().any(|f| f == POD_FINALIZER))
        .map(|p| format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()))
        .collect();
    let marked_nodes: Vec<String> = nodes
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|n| {
            let taint = n
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|ts| ts.iter().any(|t| t.key == NODE_TAINT_KEY));
            let condition = n
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == NODE_CONDITION));
            taint || condition
        })
        .map(|n| n.name_any())
        .collect();
    let crd_gone = Api::<Workspace>::all(client.clone())
        .list(&ListParams::default())
        .await
        .is_err();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(&ns, &Default::default()).await;

    // Put lifeguard back for whatever runs next, whatever the outcome above.
    let reinstall = repo_script("local-up").output()?;
    ensure!(
        reinstall.status.success(),
        "./local-up did not reinstall lifeguard:\n{}",
        String::from_utf8_lossy(&reinstall.stdout)
    );

    uninstalled?;
    ensure!(
        stuck_pods.is_empty(),
        "pods left with {POD_FINALIZER}: {stuck_pods:?}"
    );
    ensure!(
        marked_nodes.is_empty(),
        "nodes left with lifeguard's condition or taint: {marked_nodes:?}"
    );
    ensure!(
        crd_gone,
        "the Workspace CRD is gone, so no Workspace (and no {WORKSPACE_FINALIZER}) is left"
    );
    Ok(())
}
