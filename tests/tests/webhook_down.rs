//! The webhook down: deleting a Workspace (whose finalizer removal is an UPDATE) still
//! completes, while creating one is refused (the CREATE gate fails closed), and an eviction
//! goes through (`pods/eviction` fails open, docs/webhook.md) with the work still saved: the
//! pod's disposal finalizer holds it until the backup agent answers; only the restart is
//! lost. Disruptive: it takes the webhook away for everyone, so test-all runs it alone with
//! `--ignored`.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Endpoints, Pod};
use kube::api::{Api, DeleteParams, EvictParams, ListParams, PostParams};
use lifeguard_api::names::pod_name;
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Component, LIFEGUARD_NAMESPACE, poll_until, scale, wait_for, wait_gone, wait_ready_pods,
    with_namespace, workspace,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(90);
/// The webhook's stop: `--shutdown-delay` plus its wait for idle connections (docs/webhook.md).
const STOP_TIMEOUT: Duration = Duration::from_secs(150);

#[tokio::test]
#[ignore = "disruptive: takes the webhook away; test-all runs it alone with --ignored"]
async fn deleting_a_workspace_needs_no_webhook_but_creating_one_does() {
    with_namespace("webhook-down", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &workspace("quinn").build()?)
            .await?;
        wait_for(&workspaces, "quinn", TIMEOUT, "Running", |w| {
            w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running)
        })
        .await?;
        // Its disposal is confirmed by the prober's stand-in agent (a 3 s save).
        lifeguard_e2e::bind_the_stand_in(&client).await?;
        let saved = workspace("sam")
            .spec(json!({"confirmDisposal": true}))
            .pod_labels(json!({"disposal-standin": "true"}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &saved).await?;
        wait_for(&workspaces, "sam", TIMEOUT, "Running", |w| {
            w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running)
        })
        .await?;

        scale(&client, Component::Webhook, 0).await?;
        let outcome = async {
            let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
            poll_until("the webhook Service without endpoints", TIMEOUT, || async {
                let e = endpoints.get("lifeguard-webhook").await?;
                let none = e
                    .subsets
                    .unwrap_or_default()
                    .iter()
                    .all(|s| s.addresses.as_ref().is_none_or(Vec::is_empty));
                Ok(none.then_some(()))
            })
            .await?;
            // A replica that is still terminating keeps answering on the connections the
            // API server already holds to it (a clean-clone run saw a Workspace admitted
            // that way, after the endpoints were empty): the gate is only down once no
            // webhook pod is left.
            let pods: Api<Pod> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
            let selector = ListParams::default().labels(&Component::Webhook.selector());
            // A stopping replica waits for the API server to close its idle connections
            // (90 s after their last use), so this takes up to about 100 s.
            poll_until("no webhook pod left", STOP_TIMEOUT, || async {
                let left = pods.list_metadata(&selector).await?.items.len();
                Ok((left == 0).then_some(()))
            })
            .await?;
            // An eviction is not held: the API server evicts, the disposal finalizer holds
            // the pod until the agent confirmed the save, and the workspace stays Stopped.
            let workspace_pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
            workspace_pods
                .evict(&pod_name("sam"), &EvictParams::default())
                .await?;
            let stopped = wait_for(&workspaces, "sam", TIMEOUT, "Stopped", |w| {
                w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Stopped)
            })
            .await?;
            let status = stopped.status.unwrap_or_default();
            let disposal = status
                .conditions
                .iter()
                .find(|c| c.type_ == condition::DISPOSAL_CONFIRMED)
                .map(|c| (c.status.clone(), c.reason.clone()));
            anyhow::ensure!(
                disposal.as_ref().is_some_and(|(s, _)| s == "True"),
                "the work was saved before the pod went: {disposal:?}"
            );
            anyhow::ensure!(
                status.last_eviction.is_none() && status.pod_starts == 1,
                "not restarted without the webhook: {status:?}"
            );
            wait_gone(&workspace_pods, &pod_name("sam"), TIMEOUT).await?;
            // Deleting: the controller stops the pod, releases its finalizer and then the
            // Workspace's, all UPDATEs, with no webhook to answer.
            workspaces.delete("quinn", &DeleteParams::default()).await?;
            wait_gone(&workspaces, "quinn", TIMEOUT).await?;
            // Creating is the gate, and it fails closed.
            let refused = workspaces
                .create(&PostParams::default(), &workspace("rita").build()?)
                .await;
            match refused {
                Err(kube::Error::Api(s)) => anyhow::ensure!(
                    s.message.contains("lifeguard"),
                    "refused, naming the webhook: {}",
                    s.message
                ),
                Ok(_) => anyhow::bail!("a Workspace was created while no webhook could check it"),
                Err(e) => return Err(e.into()),
            }
            anyhow::Ok(())
        }
        .await;
        scale(&client, Component::Webhook, 2).await?;
        wait_ready_pods(&client, Component::Webhook, 2, TIMEOUT).await?;
        outcome
    })
    .await;
}
