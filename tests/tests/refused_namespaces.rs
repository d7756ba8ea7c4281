//! The namespaces lifeguard's webhooks exempt (kube-system, lifeguard-system,
//! lifeguard-probes: read from the installed webhook configurations) refuse Workspaces at
//! admission (the ValidatingAdmissionPolicy lifeguard-exempt-namespaces): a Workspace there
//! would skip every check, start during any window, and run with that namespace's
//! ServiceAccounts. With `--allow-service-account=default` (the local overlay), a Workspace
//! whose pod would run as another ServiceAccount of its namespace is refused by the
//! controller (ServiceAccountRefused).

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, PostParams};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    client, unique_name, wait_phase, wait_workspace_events, with_namespace, workspace,
};
use serde_json::json;

const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The namespace names a selector leaves out by name (`kubernetes.io/metadata.name NotIn`).
fn exempt_by_name(selector: Option<&LabelSelector>) -> Vec<String> {
    selector
        .and_then(|s| s.match_expressions.as_ref())
        .into_iter()
        .flatten()
        .filter(|e| e.key == NAME_LABEL && e.operator == "NotIn")
        .flat_map(|e| e.values.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn every_namespace_the_webhooks_exempt_refuses_workspaces() -> anyhow::Result<()> {
    let client = client().await?;
    let validate = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .get("lifeguard-validate")
        .await?;
    let mutate = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get("lifeguard-mutate")
        .await?;
    let exempt: BTreeSet<String> = validate
        .webhooks
        .iter()
        .flatten()
        .flat_map(|w| exempt_by_name(w.namespace_selector.as_ref()))
        .chain(
            mutate
                .webhooks
                .iter()
                .flatten()
                .flat_map(|w| exempt_by_name(w.namespace_selector.as_ref())),
        )
        .collect();
    anyhow::ensure!(
        exempt.contains("lifeguard-probes") && exempt.contains("kube-system"),
        "the webhooks' exemptions are not what this test knows: {exempt:?}"
    );
    // A server-side dry run passes admission as a real create does, and leaves nothing
    // behind whatever the outcome.
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut admitted = Vec::new();
    for ns in &exempt {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
        let name = unique_name("e2e-refused");
        match workspaces
            .create(&dry_run, &workspace(&name).build()?)
            .await
        {
            Ok(_) => admitted.push(ns.clone()),
            Err(kube::Error::Api(s)) if s.code == 403 => anyhow::ensure!(
                s.message.contains("lifeguard-exempt-namespaces")
                    && s.message
                        .contains(&format!("Workspaces are refused in namespace {ns}")),
                "{ns}: refused, but not with the policy's message: {}",
                s.message
            ),
            Err(e) => anyhow::bail!("{ns}: {e}"),
        }
    }
    anyhow::ensure!(
        admitted.is_empty(),
        "Workspaces admitted in namespaces the webhooks never check: {admitted:?}"
    );
    // A tenant namespace is not affected by the policy (a window another test opened may
    // still deny it, by the webhook).
    let tenant: Api<Workspace> = Api::namespaced(client.clone(), "default");
    match tenant
        .create(&dry_run, &workspace(&unique_name("e2e-tenant")).build()?)
        .await
    {
        Err(kube::Error::Api(s)) if s.message.contains("lifeguard-exempt-namespaces") => {
            anyhow::bail!(
                "a Workspace in namespace default was refused: {}",
                s.message
            )
        }
        _ => Ok(()),
    }
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
