//! A Workspace's author cannot hold a drain's budget slot as long as they like: a pod
//! template's own finalizers are refused with a message that says why, and the grace period
//! the pod gets (from which every timeout of its stop counts) is capped by the controller's
//! `--max-grace-period` (5 minutes by default), whatever the template says.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use lifeguard_api::names::pod_name;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{wait_for, wait_gone, wait_phase, with_namespace, workspace};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);
/// The controller's default `--max-grace-period`, which the local overlay keeps.
const CAP_SECONDS: i64 = 300;
const A_YEAR_SECONDS: i64 = 365 * 24 * 3600;

#[tokio::test]
async fn a_template_cannot_hold_its_pod_past_the_grace_period_cap() {
    with_namespace("grace-cap", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);

        let mut with_finalizer = workspace("kept").build()?;
        with_finalizer
            .spec
            .pod_template
            .metadata
            .get_or_insert_with(Default::default)
            .finalizers = Some(vec!["example.com/keep".into()]);
        match workspaces
            .create(&PostParams::default(), &with_finalizer)
            .await
        {
            Ok(_) => anyhow::bail!("a template with its own finalizer was admitted"),
            Err(kube::Error::Api(s)) => anyhow::ensure!(
                s.message.contains("spec.podTemplate.metadata.finalizers")
                    && s.message.contains("only lifeguard's finalizer"),
                "the refusal does not say why: {}",
                s.message
            ),
            Err(e) => anyhow::bail!("unexpected error: {e}"),
        }

        let long = workspace("patient")
            .pod_spec(json!({"terminationGracePeriodSeconds": A_YEAR_SECONDS}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &long).await?;
        wait_phase(&workspaces, "patient", WorkspacePhase::Running, TIMEOUT).await?;
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let pod = pods.get(&pod_name("patient")).await?;
        let grace = pod.spec.and_then(|s| s.termination_grace_period_seconds);
        anyhow::ensure!(
            grace == Some(CAP_SECONDS),
            "the pod's grace period is {grace:?}, not the cap {CAP_SECONDS}"
        );

        workspaces
            .delete("patient", &DeleteParams::default())
            .await?;
        let deleting = wait_for(&pods, &pod_name("patient"), TIMEOUT, "deleting", |p| {
            p.metadata.deletion_timestamp.is_some()
        })
        .await?;
        let asked = deleting.metadata.deletion_grace_period_seconds;
        anyhow::ensure!(
            asked.is_some_and(|g| g <= CAP_SECONDS),
            "the stop's grace period is {asked:?}, more than the cap {CAP_SECONDS}"
        );
        wait_gone(&workspaces, "patient", TIMEOUT).await
    })
    .await;
}
