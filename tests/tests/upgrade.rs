//! A rolling update of the webhook and the controller to new images, while workspaces are
//! being created and the kubelet rejects their first pods: no admission fails and no
//! re-creation is lost. Disruptive (it replaces every lifeguard pod), so `test-all` runs it
//! alone with the other #[ignore]d tests.
//!
//! The new images are the installed ones under a new tag (`ctr images tag`): same content,
//! a new image reference, which is what makes the Deployments roll their pods one by one.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Admissions, Component, LIFEGUARD_NAMESPACE, Rejector, apply_crds, declared_container,
    every_workspace_rejected, node_name, poll_until, sleeping_workspace, unique_name, wait_settled,
    with_namespace,
};
use serde_json::json;

const WORKSPACES: usize = 12;

/// A new name for an installed image on every node (each node has its own image store).
fn retag(image: &str, suffix: &str) -> anyhow::Result<String> {
    let new = format!("{image}-{suffix}");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../cluster/lifeguard-cluster");
    let out = Command::new(script)
        .args(["tag-image", image, &new])
        .output()
        .context("running cluster/lifeguard-cluster tag-image")?;
    ensure!(
        out.status.success(),
        "tag-image {image}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(new)
}

async fn set_image(client: &Client, component: Component, image: &str) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": component.container(), "image": image}]}}}});
    deployments
        .patch(
            component.app(),
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await?;
    Ok(())
}

/// Waits until the Deployment runs only pods of its current template, all Ready.
async fn rolled_out(client: &Client, component: Component) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let deployments = &deployments;
    poll_until(
        &format!("{} rolled out", component.app()),
        Duration::from_secs(240),
        || async move {
            let d = deployments.get(component.app()).await?;
            let want = d.spec.replicas.unwrap_or(1);
            let s = d.status.unwrap_or_default();
            let done = s.observed_generation >= d.metadata.generation
                && s.updated_replicas == Some(want)
                && s.ready_replicas == Some(want)
                && s.available_replicas == Some(want)
                && s.replicas == Some(want);
            Ok(done.then_some(()))
        },
    )
    .await
}

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn a_rolling_update_fails_no_admission_and_loses_no_recreation() {
    with_namespace("upgrade", |client, ns| async move {
        wait_settled(&client).await?;
        apply_crds(&client).await?;
        let mut originals = BTreeMap::new();
        for component in [Component::Webhook, Component::Controller] {
            let image = declared_container(&client, component)
                .await?
                .image
                .context("no image")?;
            originals.insert(component.app(), (component, image));
        }
        let node = node_name(&client).await?;
        let rejector = Rejector::new(
            &client,
            &node,
            &format!("lifeguard.dev/{}", unique_name("e2e-upgrade")),
        );
        let load = Admissions::start(&client, &ns, 3);

        // The update starts; while it runs, the kubelet refuses every workspace's first pod
        // (its node labels no longer match), so each workspace needs a re-creation, which
        // the controller's replicas being replaced must not lose.
        rejector.reject().await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let suffix = unique_name("upgrade");
        for (component, image) in originals.values() {
            set_image(&client, *component, &retag(image, &suffix)?).await?;
        }
        for i in 0..WORKSPACES {
            workspaces
                .create(
                    &PostParams::default(),
                    &sleeping_workspace(&format!("up-{i:02}"), &rejector)?,
                )
                .await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let workspaces = &workspaces;
        // Admit again once every workspace has been refused at least once (well before
        // the earliest could use up its retries: 3 s, 6 s, 12 s of backoff).
        let refused =
            every_workspace_rejected(workspaces, WORKSPACES, Duration::from_secs(60)).await;
        rejector.admit().await?;
        let rollouts = async {
            for (component, _) in originals.values() {
                rolled_out(&client, *component).await?;
            }
            anyhow::Ok(())
        }
        .await;

        // Every workspace ends Running on a re-created pod.
        let settled = poll_until(
            "every workspace running again",
            Duration::from_secs(300),
            || async move {
                let list = workspaces.list(&ListParams::default()).await?.items;
                let settled = list.len() == WORKSPACES
                    && list.iter().all(|w| {
                        matches!(
                            phase(w),
                            Some(WorkspacePhase::Running | WorkspacePhase::Failed)
                        )
                    });
                Ok(settled.then_some(list))
            },
        )
        .await;
        let (admitted, failures) = load.finish().await?;

        // Back to the installed images for the tests that follow.
        for (component, image) in originals.values() {
            set_image(&client, *component, image).await?;
        }
        for (component, _) in originals.values() {
            rolled_out(&client, *component).await?;
        }
        refused?;
        rollouts?;

        println!("upgrade: {admitted} admissions during the rolling update");
        ensure!(
            admitted > 100,
            "traffic kept flowing: only {admitted} admissions"
        );
        ensure!(
            failures.is_empty(),
            "{} of {admitted} admissions failed: {:?}",
            failures.len(),
            &failures[..failures.len().min(5)]
        );
        let mut recreated = 0;
        for ws in settled? {
            let status = ws.status.clone().unwrap_or_default();
            recreated += status.pod_recreated;
            if phase(&ws) == Some(WorkspacePhase::Failed) {
                ensure!(
                    status.pod_recreated == 3,
                    "{}: Failed only after every retry: {status:?}",
                    ws.name_any()
                );
            }
        }
        ensure!(
            recreated > 0,
            "rejections happened and were recovered during the update"
        );
        Ok(())
    })
    .await;
}
