//! The controller against the real kubelet: runs, rejection recovery with the same pod
//! name, giving up, waiting for maintenance windows, finalizers, and deletion.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    NAMESPACE_LABEL, Rejector, allow_pods, apply_crds, forbid_pods, node_name, unique_name,
    wait_for, wait_gone, wait_window_enforced, wait_workspace_events, with_namespace, workspace,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

async fn rejector(client: &Client) -> anyhow::Result<Rejector> {
    let node = node_name(client).await?;
    Ok(Rejector::new(
        client,
        &node,
        &format!("lifeguard.dev/{}", unique_name("e2e-pool")),
    ))
}

#[tokio::test]
async fn workspace_runs_with_a_finalized_pod() {
    with_namespace("ws-run", |client, ns| async move {
        apply_crds(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(
                &PostParams::default(),
                &workspace("alice")
                    .pod_labels(json!({"team": "e2e"}))
                    .build()?,
            )
            .await?;
        let ws = wait_for(&workspaces, "alice", TIMEOUT, "Running", |w| {
            phase(w) == Some(WorkspacePhase::Running)
        })
        .await?;
        let status = ws.status.unwrap_or_default();
        assert_eq!(
            (
                status.pod_name.as_deref(),
                status.pod_starts,
                status.pod_recreated
            ),
            (Some("ws-alice"), 1, 0)
        );
        assert!(status.node_name.is_some());
        let pod = Api::<Pod>::namespaced(client.clone(), &ns)
            .get("ws-alice")
            .await?;
        assert!(
            pod.metadata
                .finalizers
                .unwrap_or_default()
                .contains(&"lifeguard.dev/disposal".to_string())
        );
        assert_eq!(
            wait_workspace_events(&client, &ns, "alice", &["PodCreated"]).await?,
            vec!["PodCreated"],
            "`kubectl describe workspace alice` says the pod was created"
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn rejected_pod_comes_back_with_the_same_name() {
    with_namespace("ws-recover", |client, ns| async move {
        apply_crds(&client).await?;
        let rejector = rejector(&client).await?;
        rejector.reject().await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(
                &PostParams::default(),
                &workspace("bob")
                    .pod_labels(json!({"team": "e2e"}))
                    .pod_spec(rejector.pod_spec_fields())
                    .build()?,
            )
            .await?;
        let rejected = wait_for(&workspaces, "bob", TIMEOUT, "rejected", |w| {
            w.status
                .as_ref()
                .is_some_and(|s| s.last_rejection.is_some())
        })
        .await;
        rejector.admit().await?;
        let rejected = rejected?
            .status
            .unwrap_or_default()
            .last_rejection
            .expect("rejection recorded");
        assert_eq!(rejected.reason, "NodeAffinity");
        assert_eq!(rejected.node, rejector.node);
        let ws = wait_for(&workspaces, "bob", TIMEOUT, "Running again", |w| {
            phase(w) == Some(WorkspacePhase::Running)
        })
        .await;
        rejector.reject().await?;
        let status = ws?.status.unwrap_or_default();
        assert_eq!(status.pod_recreated, 1);
        assert_eq!(status.pod_starts, 2);
        assert!(
            status.pod_deletion_time.is_none(),
            "cleared once the replacement exists"
        );
        let pod = Api::<Pod>::namespaced(client.clone(), &ns)
            .get("ws-bob")
            .await?;
        assert_ne!(pod.metadata.uid, rejected.pod_uid, "a new pod, same name");
        assert_eq!(
            pod.metadata
                .annotations
                .unwrap_or_default()
                .get("lifeguard.dev/recreation")
                .map(String::as_str),
            Some("1")
        );
        let expected = [
            "PodCreated",
            "PodRejected",
            "PodReleased",
            "PodDeleted",
            "Recreating",
        ];
        wait_workspace_events(&client, &ns, "bob", &expected).await?;
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn workspace_rejected_every_time_fails_after_max_retries() {
    with_namespace("ws-giveup", |client, ns| async move {
        apply_crds(&client).await?;
        let rejector = rejector(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(
                &PostParams::default(),
                &workspace("carol")
                    .pod_labels(json!({"team": "e2e"}))
                    .pod_spec(rejector.pod_spec_fields())
                    .build()?,
            )
            .await?;
        let ws = wait_for(
            &workspaces,
            "carol",
            Duration::from_secs(120),
            "Failed",
            |w| phase(w) == Some(WorkspacePhase::Failed),
        )
        .await?;
        let status = ws.status.unwrap_or_default();
        assert_eq!(status.pod_recreated, 3, "default max retries");
        let failed = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Failed")
            .expect("Failed condition");
        assert_eq!(failed.status, "True");
        assert!(
            failed.message.contains("NodeAffinity"),
            "{}",
            failed.message
        );
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        // No rejected pod is left behind.
        wait_gone(&pods, "ws-carol", TIMEOUT).await?;
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn recreation_waits_while_a_window_denies_it() {
    with_namespace("ws-window", |client, ns| async move {
        apply_crds(&client).await?;
        let rejector = rejector(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces.create(&PostParams::default(), &workspace("dave").pod_labels(json!({"team": "e2e"})).pod_spec(rejector.pod_spec_fields()).build()?).await?;
        wait_for(&workspaces, "dave", TIMEOUT, "rejected", |w| w.status.as_ref().is_some_and(|s| s.last_rejection.is_some())).await?;
        // Hold the replacement back with a quota until every webhook replica enforces the
        // window, so that the window, not a race with its cache, decides the replacement.
        forbid_pods(&client, &ns).await?;
        wait_for(&workspaces, "dave", TIMEOUT, "replacement refused by the quota", |w| create_refused_by(w, "exceeded quota")).await?;
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let window_name = unique_name("e2e-recreate-window");
        let now = Timestamp::now();
        let window: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": window_name},
            "spec": {"start": (now - SignedDuration::from_secs(60)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                     "end": (now + SignedDuration::from_secs(600)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                     "message": "upgrade", "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns.clone()}}}
        }))?;
        windows.create(&PostParams::default(), &window).await?;
        let during = async {
            wait_window_enforced(&client, &ns, &window_name).await?;
            rejector.admit().await?;
            allow_pods(&client, &ns).await?;
            // While the window lasts, the replacement is refused and no retry is used up.
            wait_for(&workspaces, "dave", TIMEOUT, "replacement refused by the window", |w| create_refused_by(w, &window_name)).await
        }
        .await;
        let _ = windows.delete(&window_name, &DeleteParams::default()).await;
        let during = during?.status.unwrap_or_default();
        let ws = wait_for(&workspaces, "dave", TIMEOUT, "Running after the window", |w| phase(w) == Some(WorkspacePhase::Running)).await;
        rejector.reject().await?;
        assert_eq!(during.pod_recreated, 0, "no retry used while the window refused the pod");
        assert_ne!(during.phase, Some(WorkspacePhase::Failed));
        assert_eq!(ws?.status.unwrap_or_default().pod_recreated, 1);
        Ok(())
    })
    .await;
}

/// The API refused the last pod create with a message containing `says`.
fn create_refused_by(ws: &Workspace, says: &str) -> bool {
    ws.status
        .as_ref()
        .and_then(|s| s.last_create_error.as_ref())
        .is_some_and(|e| e.message.contains(says))
        && ws.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == lifeguard_api::workspace::condition::POD_CREATE_FAILED
                    && c.status == "True"
            })
        })
}

#[tokio::test]
async fn deleting_a_workspace_stops_it_and_keeps_foreign_finalizers() {
    with_namespace("ws-delete", |client, ns| async move {
        apply_crds(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(
                &PostParams::default(),
                &workspace("erin")
                    .pod_labels(json!({"team": "e2e"}))
                    .build()?,
            )
            .await?;
        wait_for(&workspaces, "erin", TIMEOUT, "Running", |w| {
            phase(w) == Some(WorkspacePhase::Running)
        })
        .await?;
        // Another controller adds its finalizer while ours is there.
        let add =
            json!([{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/keep"}]);
        pods.patch(
            "ws-erin",
            &PatchParams::default(),
            &Patch::<Value>::Json(serde_json::from_value(add)?),
        )
        .await?;
        workspaces.delete("erin", &DeleteParams::default()).await?;
        let pod = wait_for(
            &pods,
            "ws-erin",
            TIMEOUT,
            "released by lifeguard",
            |p: &Pod| {
                p.metadata.deletion_timestamp.is_some()
                    && !p
                        .metadata
                        .finalizers
                        .clone()
                        .unwrap_or_default()
                        .contains(&"lifeguard.dev/disposal".to_string())
            },
        )
        .await?;
        assert_eq!(
            pod.metadata.finalizers,
            Some(vec!["example.com/keep".to_string()]),
            "the foreign finalizer survives"
        );
        pods.patch(
            "ws-erin",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;
        // The Workspace is gone.
        wait_gone(&workspaces, "erin", TIMEOUT).await?;
        assert!(
            pods.get_opt("ws-erin").await?.is_none(),
            "no pod is left behind"
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn draining_window_stops_running_workspaces_and_reports_drained() {
    with_namespace("ws-drain", |client, ns| async move {
        apply_crds(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        for name in ["gina", "hank"] {
            workspaces.create(&PostParams::default(), &workspace(name).pod_labels(json!({"team": "e2e"})).build()?).await?;
        }
        for name in ["gina", "hank"] {
            wait_for(&workspaces, name, TIMEOUT, "Running", |w| phase(w) == Some(WorkspacePhase::Running)).await?;
        }
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let window_name = unique_name("e2e-drain");
        let now = Timestamp::now();
        let window: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": window_name},
            "spec": {"start": (now - SignedDuration::from_secs(5)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                     "end": (now + SignedDuration::from_secs(600)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                     "drain": true, "message": "node upgrade",
                     "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns.clone()}}}
        }))?;
        let surveys_before = surveys_by_source(&client).await?;
        windows.create(&PostParams::default(), &window).await?;
        let drained = wait_for(&windows, &window_name, TIMEOUT, "Drained", |w: &MaintenanceWindow| {
            w.status.as_ref().is_some_and(|s| {
                s.workspaces_remaining == Some(0) && s.conditions.iter().any(|c| c.type_ == "Drained" && c.status == "True")
            })
        })
        .await;
        let surveys_after = surveys_by_source(&client).await?;
        let surveyed = |source: &str| {
            surveys_after.get(source).copied().unwrap_or(0.0) - surveys_before.get(source).copied().unwrap_or(0.0)
        };
        let stopped: Vec<Option<WorkspacePhase>> = futures_phases(&workspaces, &["gina", "hank"]).await?;
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let pods_left = pods.list(&Default::default()).await?.items.len();
        // The operator sees it in `kubectl get events -A` too.
        let events: Api<Event> = Api::namespaced(client.clone(), "kube-system");
        let drained_event = events.list(&Default::default()).await?.items.into_iter().any(|e| {
            e.reason.as_deref() == Some("Drained")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(window_name.as_str())
        });
        let _ = windows.delete(&window_name, &DeleteParams::default()).await;
        let drained = drained?.status.unwrap_or_default();
        assert!(drained.active, "the window is active");
        assert!(drained.current_occurrence.is_some());
        assert_eq!(stopped, vec![Some(WorkspacePhase::Stopped); 2]);
        assert_eq!(pods_left, 0, "drained workspaces keep no pod");
        assert!(drained_event, "a Drained Event about the window");
        // The drain's progress came from the controller's watch, and `Drained` from a list
        // (docs/controller.md, the survey).
        assert!(surveyed("watch") >= 1.0, "surveys from the watch: {surveys_after:?}");
        assert!(surveyed("list") >= 1.0, "Drained confirmed by a list: {surveys_after:?}");
        Ok(())
    })
    .await;
}

/// The leading controller's window surveys so far, by source (`watch`, `list`).
async fn surveys_by_source(
    client: &kube::Client,
) -> anyhow::Result<std::collections::BTreeMap<String, f64>> {
    lifeguard_e2e::controller_series_by_label(
        client,
        "lifeguard_controller_window_survey_seconds_count",
    )
    .await
}

async fn futures_phases(
    api: &Api<Workspace>,
    names: &[&str],
) -> anyhow::Result<Vec<Option<WorkspacePhase>>> {
    let mut phases = Vec::new();
    for name in names {
        phases.push(phase(&api.get(name).await?));
    }
    Ok(phases)
}
