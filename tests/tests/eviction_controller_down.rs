//! Evictions that arrive while no controller runs are not lost: the webhook answers them
//! 429 and records each on its Workspace, nothing is stopped meanwhile, and once a
//! controller is back every evicted workspace is saved and comes back Running from what is
//! stored. Disruptive: it takes the controller away for everyone, so test-all runs it alone
//! with `--ignored`.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use lifeguard_api::eviction::REASON_EVICTED;
use lifeguard_api::names::pod_name;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Component, LIFEGUARD_NAMESPACE, events_about, evict_once, poll_until, scale, wait_for,
    wait_phase, wait_ready_pods, with_namespace, workspace,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(180);
const NAMES: [&str; 2] = ["ada", "bo"];

#[tokio::test]
#[ignore = "disruptive: takes the controller away; test-all runs it alone with --ignored"]
async fn evictions_while_the_controller_is_down_are_acted_on_when_it_is_back() {
    with_namespace("eviction-ctl-down", |client, ns| async move {
        lifeguard_e2e::bind_the_stand_in(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let mut old_uids = Vec::new();
        for name in NAMES {
            let ws = workspace(name)
                .spec(json!({"confirmDisposal": true}))
                .pod_labels(json!({"disposal-standin": "true"}))
                .small_requests()
                .build()?;
            workspaces.create(&PostParams::default(), &ws).await?;
        }
        for name in NAMES {
            wait_phase(&workspaces, name, WorkspacePhase::Running, TIMEOUT).await?;
            let pod = pods.get(&pod_name(name)).await?;
            old_uids.push(pod.metadata.uid.unwrap_or_default());
        }
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
        let replicas = deployments
            .get("lifeguard-controller")
            .await?
            .spec
            .replicas
            .unwrap_or(1);

        scale(&client, Component::Controller, 0).await?;
        let outcome = async {
            let lifeguard: Api<Pod> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
            let selector = ListParams::default().labels(&Component::Controller.selector());
            poll_until("no controller pod left", TIMEOUT, || async {
                let left = lifeguard.list_metadata(&selector).await?.items.len();
                Ok((left == 0).then_some(()))
            })
            .await?;
            for name in NAMES {
                let (code, message) = evict_once(&ns, &pod_name(name), false).await?;
                anyhow::ensure!(
                    code == 429 && message.contains("lifeguard will save workspace"),
                    "{name}: held while no controller runs: {code} {message}"
                );
                let ws = workspaces.get(name).await?;
                anyhow::ensure!(
                    lifeguard_api::eviction::recorded(&ws).is_some(),
                    "{name}: the eviction is recorded on the Workspace"
                );
            }
            for name in NAMES {
                let pod = pods.get(&pod_name(name)).await?;
                anyhow::ensure!(
                    pod.metadata.deletion_timestamp.is_none(),
                    "{name}: nothing stops the pod while no controller runs"
                );
            }
            anyhow::Ok(())
        }
        .await;
        scale(&client, Component::Controller, replicas).await?;
        outcome?;
        wait_ready_pods(&client, Component::Controller, replicas as usize, TIMEOUT).await?;
        for (name, old_uid) in NAMES.iter().zip(&old_uids) {
            let back = wait_for(&workspaces, name, TIMEOUT, "saved and Running again", |w| {
                w.status.as_ref().is_some_and(|s| {
                    s.phase == Some(WorkspacePhase::Running)
                        && s.last_eviction
                            .as_ref()
                            .is_some_and(|e| &e.pod_uid == old_uid)
                })
            })
            .await?;
            let status = back.status.unwrap_or_default();
            anyhow::ensure!(
                status.pod_starts == 2,
                "{name}: started again once: {status:?}"
            );
            let events = events_about(&client, Some(&ns), "Workspace", name).await?;
            anyhow::ensure!(
                events.iter().any(|(reason, note)| reason == REASON_EVICTED
                    && note.contains("its work was saved")),
                "{name}: an Evicted Event says the work was saved: {events:?}"
            );
        }
        Ok(())
    })
    .await;
}
