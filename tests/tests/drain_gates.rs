//! Drain gates (issue 26, item 2): a drain held while a "backup-in-progress" pod runs goes
//! on once it is gone; a gate that cannot be evaluated (the local overlay configures no
//! --prometheus-url) holds until maxHold, then the drain proceeds with a Warning Event.

use std::time::Duration;

use jiff::SignedDuration;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use lifeguard_api::maintenance::{MaintenanceWindow, condition};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    BUSYBOX_IMAGE, close_window, open_window, poll_until, wait_for, wait_phase,
    window_event_messages, with_namespace, workspace,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);

/// A pod that is not a workspace and says a backup is running.
async fn backup_pod(client: &Client, ns: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "backup", "labels": {"app": "backup-in-progress"}},
        "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "backup",
            "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "command": ["sleep", "3600"]}]}
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    wait_for(&pods, "backup", TIMEOUT, "Running", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await?;
    Ok(())
}

/// The `DrainHeld` condition's (status, reason, message).
fn drain_held(mw: &MaintenanceWindow) -> Option<(String, String, String)> {
    let c = mw
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == condition::DRAIN_HELD)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

async fn running_workspace(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    workspaces
        .create(&PostParams::default(), &workspace(name).build()?)
        .await?;
    wait_phase(&workspaces, name, WorkspacePhase::Running, TIMEOUT).await?;
    Ok(())
}

#[tokio::test]
async fn a_drain_waits_while_a_backup_pod_runs_and_goes_on_once_it_is_gone() {
    with_namespace("gates-pods", |client, ns| async move {
        running_workspace(&client, &ns, "ada").await?;
        backup_pod(&client, &ns).await?;
        let gates = json!({"drain": true,
            "holdWhile": {"pods": {"selector": {"matchLabels": {"app": "backup-in-progress"}}}}});
        let name = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(600),
            gates,
            json!({}),
        )
        .await?;
        let outcome = async {
            let windows: Api<MaintenanceWindow> = Api::all(client.clone());
            let held = wait_for(
                &windows,
                &name,
                TIMEOUT,
                "DrainHeld by the pods gate",
                |mw| drain_held(mw).is_some_and(|(s, r, _)| s == "True" && r == "Pods"),
            )
            .await?;
            let hold = held.status.as_ref().and_then(|s| s.hold.clone());
            anyhow::ensure!(
                hold.as_ref().is_some_and(|h| h.gate == "pods"
                    && h.message.contains(&format!("{ns}/backup"))
                    && !h.expired),
                "status.hold names the gate and the pod: {hold:?}"
            );
            // Held: the workspace was not asked to stop and still runs.
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
            let ada = workspaces.get("ada").await?;
            anyhow::ensure!(
                ada.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running)
                    && ada.metadata.annotations.as_ref().is_none_or(|a| {
                        !a.contains_key(lifeguard_api::names::DRAINED_BY_ANNOTATION)
                    }),
                "a held drain stops nothing: {:?}",
                ada.status
            );
            let since = hold.map(|h| h.since);
            // A later pass keeps the same since (it is what maxHold counts from).
            let again = windows.get(&name).await?;
            anyhow::ensure!(
                again
                    .status
                    .as_ref()
                    .and_then(|s| s.hold.as_ref())
                    .map(|h| h.since.clone())
                    == since,
                "since is kept: {:?}",
                again.status
            );
            Api::<Pod>::namespaced(client.clone(), &ns)
                .delete("backup", &DeleteParams::default())
                .await?;
            wait_phase(&workspaces, "ada", WorkspacePhase::Stopped, TIMEOUT).await?;
            let released = wait_for(&windows, &name, TIMEOUT, "released", |mw| {
                drain_held(mw).is_some_and(|(s, _, _)| s == "False") || drain_held(mw).is_none()
            })
            .await?;
            // Cleared, but kept for the rest of the occurrence with the first hold's since:
            // a matching pod recreated now would not restart maxHold.
            let kept = released.status.as_ref().and_then(|s| s.hold.clone());
            anyhow::ensure!(
                kept.as_ref().is_some_and(|h| h.cleared && !h.expired)
                    && kept.map(|h| h.since) == since,
                "the hold is cleared and keeps its since: {:?}",
                released.status
            );
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}

#[tokio::test]
async fn a_gate_that_cannot_be_evaluated_holds_until_max_hold_then_the_drain_proceeds() {
    with_namespace("gates-maxhold", |client, ns| async move {
        running_workspace(&client, &ns, "bob").await?;
        // `vector(1)` always returns a series; without --prometheus-url it cannot even be
        // asked. Either way the gate holds, for 20 s at most.
        let gates: Value = json!({"drain": true, "maxHold": "20s",
            "holdWhile": {"prometheus": {"query": "vector(1)"}}});
        let name = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(600),
            gates,
            json!({}),
        )
        .await?;
        let outcome = async {
            let windows: Api<MaintenanceWindow> = Api::all(client.clone());
            wait_for(
                &windows,
                &name,
                TIMEOUT,
                "DrainHeld by the prometheus gate",
                |mw| drain_held(mw).is_some_and(|(s, r, _)| s == "True" && r == "Prometheus"),
            )
            .await?;
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
            anyhow::ensure!(
                workspaces
                    .get("bob")
                    .await?
                    .status
                    .as_ref()
                    .and_then(|s| s.phase)
                    == Some(WorkspacePhase::Running),
                "held: bob still runs"
            );
            wait_phase(&workspaces, "bob", WorkspacePhase::Stopped, TIMEOUT).await?;
            let expired = wait_for(&windows, &name, TIMEOUT, "MaxHoldExpired", |mw| {
                drain_held(mw).is_some_and(|(s, r, _)| {
                    s == "False" && r == condition::REASON_MAX_HOLD_EXPIRED
                })
            })
            .await?;
            anyhow::ensure!(
                expired
                    .status
                    .as_ref()
                    .and_then(|s| s.hold.as_ref())
                    .is_some_and(|h| h.expired),
                "status.hold says expired: {:?}",
                expired.status
            );
            poll_until("the DrainHoldExpired Event", TIMEOUT, || async {
                let events = window_event_messages(&client, &name).await?;
                Ok(events
                    .into_iter()
                    .find(|(reason, _)| reason == "DrainHoldExpired"))
            })
            .await?;
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}
