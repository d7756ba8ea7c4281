//! Smoke tests proving the test bed is a real cluster: CRDs, volumes, kubelet rejections.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::maintenance::{
    MaintenanceWindow, MaintenanceWindowSpec, MaintenanceWindowStatus,
};
use lifeguard_api::workspace::{Workspace, WorkspacePhase, WorkspaceSpec, WorkspaceStatus};
use lifeguard_e2e::{
    BUSYBOX_IMAGE, DEFAULT_TIMEOUT, apply_crds, node_name, unique_name, wait_for, with_namespace,
};
use serde_json::json;

fn busybox_pod(name: &str, extra_spec: serde_json::Value, script: &str) -> Pod {
    let mut spec = json!({
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "containers": [{
            "name": "main",
            "image": BUSYBOX_IMAGE,
            "imagePullPolicy": "Never",
            "command": ["sh", "-c", script],
        }],
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
        .expect("test pod literal is a valid Pod")
}

#[tokio::test]
async fn workspace_and_maintenance_window_round_trip_through_the_api_server() {
    with_namespace("crd", |client, ns| async move {
        apply_crds(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let spec: WorkspaceSpec = serde_json::from_value(json!({
            "podTemplate": {
                "metadata": {"labels": {"team": "blue"}},
                "spec": {"containers": [{"name": "ide", "image": BUSYBOX_IMAGE,
                                         "resources": {"requests": {"cpu": "100m"}}}]}
            }
        }))?;
        let created = workspaces
            .create(
                &PostParams::default(),
                &Workspace::new("alice", spec.clone()),
            )
            .await?;
        assert_eq!(
            created.spec, spec,
            "the API server kept the pod template as given"
        );

        // Status is a subresource: written separately, and the spec survives it.
        let status = WorkspaceStatus {
            phase: Some(WorkspacePhase::Running),
            pod_name: Some(lifeguard_api::names::pod_name("alice")),
            pod_starts: 1,
            ..Default::default()
        };
        // Compared as the patch's answer: the running controller reconciles "alice" too.
        let patched = workspaces
            .patch_status(
                "alice",
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await?;
        let read = workspaces.get("alice").await?;
        let written = patched.status.unwrap_or_default();
        assert_eq!(
            (written.phase, written.pod_name, written.pod_starts),
            (status.phase, status.pod_name, status.pod_starts)
        );
        assert_eq!(read.spec, spec);

        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let name = unique_name("e2e-upgrade");
        let window = MaintenanceWindow::new(
            &name,
            MaintenanceWindowSpec {
                schedule: Some("0 22 * * 6".into()),
                duration: Some("4h".into()),
                time_zone: Some("Europe/Berlin".into()),
                message: Some("cluster upgrade".into()),
                drain: true,
                ..Default::default()
            },
        );
        let created = windows.create(&PostParams::default(), &window).await?;
        let status = MaintenanceWindowStatus {
            active: false,
            workspaces_remaining: Some(0),
            ..Default::default()
        };
        // The status as the API server stored it, from the patch's answer: the running
        // controller may write its own status right after.
        let patched = windows
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await?;
        let read = windows.get(&name).await?;
        windows.delete(&name, &DeleteParams::default()).await?;
        assert_eq!(read.spec, created.spec);
        assert_eq!(read.spec.time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(
            patched.status.as_ref().map(|s| s.workspaces_remaining),
            Some(Some(0))
        );
        assert!(patched.status.is_some_and(|s| !s.active));
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn pod_with_an_empty_dir_volume_runs_to_completion() {
    with_namespace("emptydir", |client, ns| async move {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let mut pod = busybox_pod(
            "scratch",
            json!({"volumes": [{"name": "scratch", "emptyDir": {}}]}),
            "echo lifeguard > /scratch/probe && sync && test \"$(cat /scratch/probe)\" = lifeguard",
        );
        if let Some(spec) = pod.spec.as_mut() {
            spec.containers[0].volume_mounts = Some(vec![serde_json::from_value(
                json!({"name": "scratch", "mountPath": "/scratch"}),
            )?]);
        }
        pods.create(&PostParams::default(), &pod).await?;
        let done = wait_for(&pods, "scratch", DEFAULT_TIMEOUT, "finished", |p: &Pod| {
            matches!(
                p.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            )
        })
        .await?;
        let status = done.status.unwrap_or_default();
        assert_eq!(
            status.phase.as_deref(),
            Some("Succeeded"),
            "pod status: {status:?}"
        );
        let exit = status
            .container_statuses
            .unwrap_or_default()
            .first()
            .and_then(|c| c.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code));
        assert_eq!(exit, Some(0));
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn kubelet_rejects_a_bound_pod_whose_node_selector_does_not_match() {
    with_namespace("reject", |client, ns| async move {
        let node = node_name(&client).await?;
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        // Bound directly to the node, so the scheduler never filters it: only the kubelet's
        // own admission check sees the mismatch, as when node labels change after binding.
        let pod = busybox_pod(
            "rejected",
            json!({"nodeName": node, "nodeSelector": {"lifeguard.dev/e2e-absent-label": "true"}}),
            "sleep 3600",
        );
        pods.create(&PostParams::default(), &pod).await?;
        let failed = wait_for(
            &pods,
            "rejected",
            Duration::from_secs(60),
            "Failed",
            |p: &Pod| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"),
        )
        .await?;
        let status = failed.status.unwrap_or_default();
        assert_eq!(
            status.reason.as_deref(),
            Some("NodeAffinity"),
            "pod status: {status:?}"
        );
        let started = status
            .container_statuses
            .unwrap_or_default()
            .iter()
            .any(|c| {
                c.state
                    .as_ref()
                    .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
            });
        assert!(!started, "a rejected pod never starts a container");
        Ok(())
    })
    .await;
}
