//! A Workspace in kube-system (exempt from admission, so the webhook never validates it)
//! would get a pod running with that namespace's ServiceAccounts. The installed controller
//! refuses it: Failed, reason NamespaceRefused, a Warning Event, and never a pod.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{client, unique_name, wait_phase, workspace, workspace_event_reasons};
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
        let reasons = workspace_event_reasons(&client, "kube-system", &name).await?;
        anyhow::ensure!(
            reasons.iter().any(|r| r == "NamespaceRefused"),
            "no NamespaceRefused Event: {reasons:?}"
        );
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
