//! A stranger's pod holding a workspace's pod name: lifeguard reports the conflict and never
//! touches that pod (no finalizer, no owner, not deleted); once its owner removes it, the
//! workspace gets its own pod under the name.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use lifeguard_api::workspace::condition::POD_CONFLICT;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{BUSYBOX_IMAGE, wait_for, wait_gone, with_namespace};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(90);

/// The stranger's pod: the same sleeper a workspace runs.
fn sleeper() -> serde_json::Value {
    json!({
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                        "command": ["sh", "-c", lifeguard_e2e::SLEEP_COMMAND]}]
    })
}

fn conflict(ws: &Workspace) -> Option<String> {
    ws.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == POD_CONFLICT)
        .map(|c| c.status.clone())
}

#[tokio::test]
async fn a_strangers_pod_of_the_same_name_is_left_alone() {
    with_namespace("stranger", |client, ns| async move {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let stranger: Pod = serde_json::from_value(json!({
            "metadata": {"name": "ws-sam", "labels": {"app": "someone-else"}},
            "spec": sleeper(),
        }))?;
        let stranger = pods.create(&PostParams::default(), &stranger).await?;
        let ws = lifeguard_e2e::workspace("sam").build()?;
        workspaces.create(&PostParams::default(), &ws).await?;

        let waiting = wait_for(
            &workspaces,
            "sam",
            TIMEOUT,
            "Pending with PodConflict",
            |w| {
                w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Pending)
                    && conflict(w).as_deref() == Some("True")
            },
        )
        .await?;
        let message = waiting
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == POD_CONFLICT))
            .map(|c| c.message.clone())
            .unwrap_or_default();
        assert!(
            message.contains("ws-sam") && message.contains("left alone"),
            "{message}"
        );
        let untouched = pods.get("ws-sam").await?;
        assert_eq!(
            untouched.uid(),
            stranger.uid(),
            "the stranger's pod is the same pod"
        );
        assert!(
            untouched.metadata.deletion_timestamp.is_none(),
            "not deleted"
        );
        assert!(
            untouched.finalizers().is_empty(),
            "no finalizer stamped on it"
        );
        assert!(untouched.owner_references().is_empty(), "not adopted");

        pods.delete("ws-sam", &DeleteParams::default().grace_period(0))
            .await?;
        wait_gone(&pods, "ws-sam", TIMEOUT).await?;
        let running = wait_for(
            &workspaces,
            "sam",
            TIMEOUT,
            "Running with its own pod",
            |w| w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running),
        )
        .await?;
        assert_eq!(
            conflict(&running).as_deref(),
            Some("False"),
            "the conflict is resolved"
        );
        let own = pods.get("ws-sam").await?;
        let owner = own
            .owner_references()
            .iter()
            .find(|r| r.controller == Some(true))
            .map(|r| r.uid.clone());
        assert_eq!(
            owner, running.metadata.uid,
            "the new ws-sam is the workspace's own"
        );
        Ok(())
    })
    .await;
}
