//! A tenant who may edit everything in a shared namespace (the built-in `edit` role) cannot
//! answer the disposal handshake for someone else's workspace: the API server refuses, by
//! lifeguard's admission policy (manifests/disposal-agent/answers-policy.yaml), an annotation
//! `lifeguard.dev/disposal-result` on a workspace pod and the removal of
//! `lifeguard.dev/disposal-confirmation`, with a message that says who may; the workspace's
//! stop then still waits for the real agent.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use lifeguard_api::names::{
    DISPOSAL_CONFIRMATION_ANNOTATION, DISPOSAL_RESULT_ANNOTATION, pod_name,
};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{wait_phase, with_namespace, workspace};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);
const TENANT: &str = "e2e-tenant@example.com";

/// A client acting as `TENANT`, who holds `edit` in `ns` only.
async fn tenant(admin: &Client, ns: &str) -> anyhow::Result<Client> {
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "tenant-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT}]
    }))?;
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await?;
    let mut config = lifeguard_e2e::cluster_config().await?;
    config.auth_info.impersonate = Some(TENANT.into());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".into()]);
    Ok(Client::try_from(config)?)
}

fn refusal(outcome: Result<Pod, kube::Error>) -> anyhow::Result<String> {
    match outcome {
        Ok(_) => anyhow::bail!("admitted"),
        Err(kube::Error::Api(s)) if s.code == 403 || s.code == 422 => Ok(s.message),
        Err(e) => anyhow::bail!("unexpected error: {e}"),
    }
}

#[tokio::test]
async fn a_tenant_cannot_forge_the_disposal_answer() {
    with_namespace("forged-answer", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let ws = workspace("bob")
            .spec(json!({"confirmDisposal": true}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &ws).await?;
        wait_phase(&workspaces, "bob", WorkspacePhase::Running, TIMEOUT).await?;
        let tenant = tenant(&client, &ns).await?;
        let pods: Api<Pod> = Api::namespaced(tenant, &ns);
        let name = pod_name("bob");
        // The tenant may patch pods at all (so RBAC is not what refuses below).
        pods.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"e2e-note": "mine"}}})),
        )
        .await
        .context("the tenant's own annotation")?;
        let forged = refusal(
            pods.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"annotations": {DISPOSAL_RESULT_ANNOTATION: "saved"}}}),
                ),
            )
            .await,
        )
        .context("a forged answer")?;
        ensure!(
            forged.contains("lifeguard-disposal-answers")
                && forged.contains("only the disposal agent"),
            "{forged}"
        );
        let dropped = refusal(
            pods.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"annotations": {DISPOSAL_CONFIRMATION_ANNOTATION: null}}}),
                ),
            )
            .await,
        )
        .context("dropping the confirmation requirement")?;
        ensure!(
            dropped.contains("cannot be changed or removed"),
            "{dropped}"
        );
        let pod = Api::<Pod>::namespaced(client.clone(), &ns)
            .get(&name)
            .await?;
        let annotations = pod.metadata.annotations.unwrap_or_default();
        ensure!(
            !annotations.contains_key(DISPOSAL_RESULT_ANNOTATION)
                && annotations.contains_key(DISPOSAL_CONFIRMATION_ANNOTATION),
            "the pod's handshake annotations changed: {annotations:?}"
        );
        Ok(())
    })
    .await;
}
