//! The sweep against the real API server and kubelet: a workspace pod being deleted with
//! lifeguard's finalizer that no Workspace will ever release is released by the sweep,
//! found through the controller's pod watch (it makes no list), not left Terminating.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::names::{POD_FINALIZER, WORKSPACE_LABEL};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    BUSYBOX_IMAGE, DEFAULT_TIMEOUT, wait_for, wait_gone, with_namespace, workspace,
};
use serde_json::json;

/// The local install sweeps every 30 s (`manifests/local`); the rest is the garbage
/// collector and the kubelet stopping a container.
const SWEPT: Duration = Duration::from_secs(120);

fn holds_our_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == POD_FINALIZER)
}

#[tokio::test]
async fn a_deleted_workspace_pod_no_workspace_controls_is_released() {
    with_namespace("sweep-stranger", |client, ns| async move {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        // Labelled as a workspace pod, so the webhook stamps our finalizer, but created by
        // hand: no Workspace controls it, so no reconcile will ever release it. Bound to a
        // node that does not exist, so no kubelet is involved.
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "ws-stranger", "labels": {WORKSPACE_LABEL: "stranger"}},
            "spec": {"nodeName": "e2e-nowhere",
                     "containers": [{"name": "ide", "image": BUSYBOX_IMAGE}]}
        }))?;
        let created = pods.create(&PostParams::default(), &pod).await?;
        assert!(holds_our_finalizer(&created), "the webhook stamped it");
        let deleting = pods
            .delete("ws-stranger", &DeleteParams::default().grace_period(0))
            .await?;
        let Some(deleting) = deleting.left() else {
            anyhow::bail!("the pod went at once: our finalizer did not hold it");
        };
        assert!(deleting.metadata.deletion_timestamp.is_some());
        wait_gone(&pods, "ws-stranger", SWEPT).await
    })
    .await;
}

#[tokio::test]
async fn the_pod_of_a_workspace_removed_by_force_is_released() {
    with_namespace("sweep-forced", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &workspace("alice").build()?)
            .await?;
        wait_for(&workspaces, "alice", DEFAULT_TIMEOUT, "Running", |w| {
            w.phase() == Some(WorkspacePhase::Running)
        })
        .await?;
        // The Workspace goes without the controller's finalizer: deleted, then the
        // finalizer taken off before the controller could stop the pod and record its end
        // (taken off first, the controller would add it back). The pod is deleted by the
        // controller's stop or by the garbage collector (its owner reference), and our
        // finalizer holds it until the sweep finds its Workspace gone.
        workspaces.delete("alice", &DeleteParams::default()).await?;
        workspaces
            .patch(
                "alice",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await?;
        wait_gone(&workspaces, "alice", DEFAULT_TIMEOUT).await?;
        wait_gone(&pods, "ws-alice", SWEPT).await
    })
    .await;
}
