//! A workspace whose template has a native sidecar (an init container with
//! `restartPolicy: Always`, say a file-sync agent): it starts Running, and when it stops,
//! its pod is released only once the sidecar, which the kubelet stops after the workspace's
//! container, has stopped too, so no work the sidecar still writes is thrown away.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher;
use lifeguard_api::names::{POD_FINALIZER, pod_name};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{SLEEP_COMMAND, wait_gone, wait_phase, with_namespace, workspace};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

fn sidecar_running(pod: &Pod) -> Option<bool> {
    let statuses = pod.status.as_ref()?.init_container_statuses.as_ref()?;
    let sync = statuses.iter().find(|s| s.name == "sync")?;
    Some(sync.state.as_ref()?.running.is_some())
}

#[tokio::test]
async fn a_native_sidecar_is_stopped_before_its_pod_is_released() {
    with_namespace("sidecar", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        // The sidecar takes 3 s to finish once asked to stop.
        let ws = workspace("synced")
            .pod_spec(json!({"initContainers": [{
                "name": "sync", "image": lifeguard_e2e::BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                "restartPolicy": "Always",
                "command": ["sh", "-c", "trap 'sleep 3; exit 0' TERM; sleep 3600 & wait"],
                "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}}}],
                "terminationGracePeriodSeconds": 20}))
            .ide(json!({"command": ["sh", "-c", SLEEP_COMMAND]}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &ws).await?;
        let running = wait_phase(&workspaces, "synced", WorkspacePhase::Running, TIMEOUT).await?;
        let ready = running
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
            .map(|c| c.status.clone());
        anyhow::ensure!(
            ready.as_deref() == Some("True"),
            "Ready with its sidecar: {ready:?}"
        );
        let name = pod_name("synced");
        let pod = pods.get(&name).await?;
        anyhow::ensure!(sidecar_running(&pod) == Some(true), "the sidecar runs");

        // Watch the pod through its stop: the first state without our finalizer is the
        // release, and by then the sidecar must have stopped.
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = watcher(pods.clone(), config).boxed();
        workspaces
            .delete("synced", &DeleteParams::default())
            .await?;
        let released = tokio::time::timeout(TIMEOUT, async {
            while let Some(event) = events.next().await {
                match event {
                    // Released with nothing left to wait for, the API server deletes it in
                    // the same write.
                    Ok(watcher::Event::Delete(pod)) => return Some(pod),
                    Ok(watcher::Event::Apply(pod)) => {
                        let ours = pod
                            .metadata
                            .finalizers
                            .as_ref()
                            .is_some_and(|f| f.iter().any(|f| f == POD_FINALIZER));
                        if pod.metadata.deletion_timestamp.is_some() && !ours {
                            return Some(pod);
                        }
                    }
                    _ => {}
                }
            }
            None
        })
        .await?;
        let released = released.ok_or_else(|| anyhow::anyhow!("the pod's watch ended"))?;
        anyhow::ensure!(
            sidecar_running(&released) == Some(false),
            "released while its sidecar still ran: {:?}",
            released.status.and_then(|s| s.init_container_statuses)
        );
        wait_gone(&pods, &name, TIMEOUT).await?;
        wait_gone(&workspaces, "synced", TIMEOUT).await?;
        Ok(())
    })
    .await;
}
