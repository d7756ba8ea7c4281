//! A Workspace in kube-system (exempt from admission, so the webhook never validates it)
//! would get a pod running with that namespace's ServiceAccounts. The installed controller
//! refuses it: Failed, reason NamespaceRefused, a Warning Event, and never a pod. With
//! `--allow-service-account=default` (the local overlay), a Workspace whose pod would run as
//! another ServiceAccount of its namespace is refused the same way (ServiceAccountRefused).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    client, unique_name, wait_phase, wait_workspace_events, with_namespace, workspace,
};
use serde_json::json;

#[tokio::test]
async fn a_workspace_in_kube_system_is_refused_and_gets_no_pod() -> anyhow::Result<()> {
    let client = client().await?;
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), "kube-system");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let name = unique_name("e2e-refused");
    workspaces
        .create(&PostParams::default(), &workspace(&name).build()?)
        .await?;
    let outcome = async {
        let failed = wait_phase(
            &workspaces,
            &name,
            WorkspacePhase::Failed,
            Duration::from_secs(60),
        )
        .await?;
        let condition = failed
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Failed"))
            .ok_or_else(|| anyhow::anyhow!("no Failed condition: {failed:?}"))?;
        anyhow::ensure!(
            condition.reason == "NamespaceRefused" && condition.message.contains("kube-system"),
            "{condition:?}"
        );
        anyhow::ensure!(
            pods.get_opt(&format!("ws-{name}")).await?.is_none(),
            "a pod was created in kube-system"
        );
        wait_workspace_events(&client, "kube-system", &name, &["NamespaceRefused"]).await?;
        Ok(())
    }
    .await;
    // Its finalizer is the controller's; removing it here keeps a failed run from leaving
    // the Workspace behind.
    let _ = workspaces
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await;
    let _ = workspaces.delete(&name, &DeleteParams::default()).await;
    outcome
}

#[tokio::test]
async fn a_workspace_pod_may_not_run_as_another_service_account() {
    with_namespace("refused-account", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let deployer = workspace("deployer")
            .pod_spec(json!({"serviceAccountName": "deployer"}))
            .build()?;
        workspaces.create(&PostParams::default(), &deployer).await?;
        let plain = workspace("plain").build()?;
        workspaces.create(&PostParams::default(), &plain).await?;
        let failed = wait_phase(
            &workspaces,
            "deployer",
            WorkspacePhase::Failed,
            Duration::from_secs(60),
        )
        .await?;
        let condition = failed
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Failed"))
            .ok_or_else(|| anyhow::anyhow!("no Failed condition: {failed:?}"))?;
        anyhow::ensure!(
            condition.reason == "ServiceAccountRefused"
                && condition.message.contains("\"deployer\""),
            "{condition:?}"
        );
        anyhow::ensure!(
            pods.get_opt("ws-deployer").await?.is_none(),
            "a pod was created to run as the refused account"
        );
        wait_workspace_events(&client, &ns, "deployer", &["ServiceAccountRefused"]).await?;
        // The namespace's default account is allowed: the other workspace runs.
        wait_phase(
            &workspaces,
            "plain",
            WorkspacePhase::Running,
            Duration::from_secs(90),
        )
        .await?;
        Ok(())
    })
    .await;
}
