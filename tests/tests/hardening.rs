//! Stuck states and bypasses found by trying lifeguard adversarially, as a user meets them:
//! a pod create the API refuses (a ResourceQuota of 0 pods), a forged re-creation marker
//! in a template, a drain over a Workspace that never got a pod, and a window that selects
//! Workspaces by label, on both the Workspace and its pod.

use std::time::Duration;

use jiff::SignedDuration;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::workspace::condition::{POD_CREATE_FAILED, READY};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    allow_pods, close_window, events_about, forbid_pods, open_window, wait_for, wait_phase,
    with_namespace, workspace, workspace_event_reasons,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(90);
const TEN_MINUTES: SignedDuration = SignedDuration::from_secs(600);

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

/// (status, reason, message) of condition `type_`.
fn condition(ws: &Workspace, type_: &str) -> Option<(String, String, String)> {
    let c = ws
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until Workspace `name` is Pending because its pod create was refused with a
/// message containing `says`.
async fn refused(api: &Api<Workspace>, name: &str, says: &str) -> anyhow::Result<Workspace> {
    wait_for(api, name, TIMEOUT, &format!("refused: {says}"), |w| {
        phase(w) == Some(WorkspacePhase::Pending)
            && condition(w, POD_CREATE_FAILED)
                .is_some_and(|(status, _, message)| status == "True" && message.contains(says))
    })
    .await
}

/// The notes of the `PodCreateFailed` Events about Workspace `name`.
async fn create_refusal_notes(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> anyhow::Result<Vec<String>> {
    let events = events_about(client, Some(ns), "Workspace", name).await?;
    Ok(events
        .into_iter()
        .filter(|(reason, _)| reason == "PodCreateFailed")
        .map(|(_, note)| note)
        .collect())
}

#[tokio::test]
async fn a_refused_pod_create_is_reported_once_and_the_workspace_starts_when_allowed() {
    with_namespace("quota", |client, ns| async move {
        forbid_pods(&client, &ns).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &workspace("olga").build()?)
            .await?;
        let pending = refused(&workspaces, "olga", "exceeded quota").await?;
        let (_, reason, _) = condition(&pending, READY).unwrap_or_default();
        assert_eq!(reason, "PodCreateFailed", "Ready says why it is not");
        // Retried with backoff: wait for a third attempt refused by the quota, then count
        // the Events.
        let retried = wait_for(&workspaces, "olga", TIMEOUT, "three attempts", |w| {
            w.status
                .as_ref()
                .and_then(|s| s.last_create_error.as_ref())
                .is_some_and(|e| e.attempts >= 3 && e.code == 403)
        })
        .await?;
        let error = retried
            .status
            .and_then(|s| s.last_create_error)
            .ok_or_else(|| anyhow::anyhow!("no lastCreateError"))?;
        // A refusal of another kind in between (seen once: the API server's call to the
        // webhook ended with EOF, a 500) is a new refusal, announced once, and the quota's
        // after it is new again. So: one Event per change of refusal, never one per attempt.
        let notes = create_refusal_notes(&client, &ns, "olga").await?;
        let quota = notes
            .iter()
            .filter(|n| n.contains("exceeded quota"))
            .count();
        let others = notes.len() - quota;
        assert_eq!(
            quota,
            1 + others,
            "one Event per distinct refusal in a row, not one per attempt: {notes:?}"
        );
        if others == 0 {
            // The local overlay keeps the default 5 s first wait: 5 s then 10 s between the
            // first three attempts when the wait doubles, 10 s at a fixed 5 s.
            let spread = error.time.0.duration_since(error.since.0).as_secs();
            assert!(
                spread >= 14,
                "attempts 1 to {} are spread by a doubling backoff ({spread} s)",
                error.attempts
            );
        }

        allow_pods(&client, &ns).await?;
        let running = wait_for(&workspaces, "olga", TIMEOUT, "Running", |w| {
            phase(w) == Some(WorkspacePhase::Running)
        })
        .await?;
        let (status, _, _) = condition(&running, POD_CREATE_FAILED).unwrap_or_default();
        assert_eq!(status, "False", "the refusal is cleared once a pod exists");
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn a_template_cannot_forge_a_recreation_to_start_during_a_window() {
    with_namespace("forge", |client, ns| async move {
        forbid_pods(&client, &ns).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &workspace("mallory").build()?)
            .await?;
        refused(&workspaces, "mallory", "exceeded quota").await?;
        let window = open_window(
            &client,
            &ns,
            TEN_MINUTES,
            json!({"allowRecreation": true}),
            json!({}),
        )
        .await?;
        let outcome = async {
            // The reproduction: mark the template as a re-creation while no pod exists.
            let forged = json!({"spec": {"podTemplate": {"metadata": {"annotations": {
                "lifeguard.dev/recreation": "1"}}}}});
            let edit = workspaces
                .patch("mallory", &PatchParams::default(), &Patch::Merge(&forged))
                .await;
            match edit {
                Err(kube::Error::Api(s)) => anyhow::ensure!(
                    s.message.contains("lifeguard.dev/recreation")
                        && s.message.contains("set by the lifeguard controller only"),
                    "refused, naming the key: {}",
                    s.message
                ),
                other => anyhow::bail!("the forged marker was accepted: {other:?}"),
            }
            // With the quota gone, the window still denies the first start.
            allow_pods(&client, &ns).await?;
            let denied = refused(&workspaces, "mallory", &window).await?;
            let (_, reason, _) = condition(&denied, POD_CREATE_FAILED).unwrap_or_default();
            anyhow::ensure!(reason == "MaintenanceDenied", "reason {reason}");
            let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
            anyhow::ensure!(
                pods.get_opt("ws-mallory").await?.is_none(),
                "no pod during the window"
            );
            Ok(())
        }
        .await;
        close_window(&client, &window).await;
        outcome?;
        wait_phase(&workspaces, "mallory", WorkspacePhase::Running, TIMEOUT).await?;
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn a_drained_workspace_that_never_had_a_pod_counts_as_stopped_and_stays_stopped() {
    with_namespace("drain-nopod", |client, ns| async move {
        forbid_pods(&client, &ns).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &workspace("nina").build()?)
            .await?;
        refused(&workspaces, "nina", "exceeded quota").await?;
        let window =
            open_window(&client, &ns, TEN_MINUTES, json!({"drain": true}), json!({})).await?;
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let drained = wait_for(&windows, &window, TIMEOUT, "Drained", |w| {
            w.status.as_ref().is_some_and(|s| {
                s.workspaces_remaining == Some(0)
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "Drained" && c.status == "True")
            })
        })
        .await;
        let stopped = workspaces.get("nina").await.map(|w| phase(&w));
        close_window(&client, &window).await;
        drained?;
        assert_eq!(stopped?, Some(WorkspacePhase::Stopped));

        // After the window, with room for pods again: a new Workspace starts, the drained
        // one stays stopped (its pod is neither created nor created-and-deleted).
        allow_pods(&client, &ns).await?;
        workspaces
            .create(&PostParams::default(), &workspace("oscar").build()?)
            .await?;
        wait_for(&workspaces, "oscar", TIMEOUT, "Running", |w| {
            phase(w) == Some(WorkspacePhase::Running)
        })
        .await?;
        let nina = workspaces.get("nina").await?;
        assert_eq!(phase(&nina), Some(WorkspacePhase::Stopped));
        let reasons = workspace_event_reasons(&client, &ns, "nina").await?;
        assert!(
            !reasons.iter().any(|r| r == "PodCreated"),
            "the drained workspace was never started: {reasons:?}"
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn a_workspace_selector_covers_a_workspace_and_its_pod_alike() {
    with_namespace("ws-selector", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        forbid_pods(&client, &ns).await?;
        // Created before the window, waiting for room: their pods are created during it.
        for (name, tier) in [("paid", "pro"), ("free", "free")] {
            workspaces
                .create(
                    &PostParams::default(),
                    &workspace(name).labels(json!({"tier": tier})).build()?,
                )
                .await?;
            refused(&workspaces, name, "exceeded quota").await?;
        }
        let selector = json!({"workspaceSelector": {"matchLabels": {"tier": "free"}}});
        let window =
            open_window(&client, &ns, TEN_MINUTES, selector, json!({"tier": "free"})).await?;
        let outcome = async {
            // The Workspace path: a new labelled Workspace is denied, another is not.
            let created = workspaces
                .create(
                    &PostParams::default(),
                    &workspace("free-2")
                        .labels(json!({"tier": "free"}))
                        .build()?,
                )
                .await;
            match created {
                Err(kube::Error::Api(s)) => anyhow::ensure!(
                    s.message.contains(&window),
                    "denied by the window: {}",
                    s.message
                ),
                other => anyhow::bail!("a covered Workspace was admitted: {other:?}"),
            }
            // The pod path: the covered Workspace's pod is denied, the other one starts.
            allow_pods(&client, &ns).await?;
            wait_for(&workspaces, "paid", TIMEOUT, "Running", |w| {
                phase(w) == Some(WorkspacePhase::Running)
            })
            .await?;
            let denied = refused(&workspaces, "free", &window).await?;
            let (_, reason, _) = condition(&denied, POD_CREATE_FAILED).unwrap_or_default();
            anyhow::ensure!(reason == "MaintenanceDenied", "reason {reason}");
            Ok(())
        }
        .await;
        close_window(&client, &window).await;
        outcome?;
        wait_phase(&workspaces, "free", WorkspacePhase::Running, TIMEOUT).await?;
        Ok(())
    })
    .await;
}
