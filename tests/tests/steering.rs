//! A workspace pod created before a node-scoped window opened, still unscheduled when it
//! opens, is replaced by one the webhook steers off the window's nodes: otherwise the
//! scheduler could place it on a node the window has drained and labelled drained, under
//! the upgrade. Live: the pod waits for a node label no node has; the window selects the
//! nodes with that label; once the pod is replaced, node 2 gets the label: a plain pod
//! asking for it is placed there, the steered one stays off it.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::names::pod_name;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    BUSYBOX_IMAGE, LOCAL_KUBECONFIG, NAMESPACE_LABEL, SECOND_NODE, close_window, events_about,
    rfc3339, unique_name, wait_for, wait_workspace_events, with_namespace, workspace,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

/// Removes the test's label from node 2 however the test ends (by `kubectl`: a drop runs
/// inside the test's runtime, where the test's own client cannot be driven).
struct NodeLabel {
    nodes: Api<Node>,
    key: String,
}

impl NodeLabel {
    async fn set(&self, value: Option<&str>) -> anyhow::Result<()> {
        let patch = json!({"metadata": {"labels": {&self.key: value}}});
        self.nodes
            .patch(SECOND_NODE, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }
}

impl Drop for NodeLabel {
    fn drop(&mut self) {
        let kubeconfig =
            std::env::var("KUBECONFIG").unwrap_or_else(|_| LOCAL_KUBECONFIG.to_string());
        let removed = std::process::Command::new("kubectl")
            .env("KUBECONFIG", kubeconfig)
            .args(["label", "node", SECOND_NODE, &format!("{}-", self.key)])
            .output();
        if !removed.is_ok_and(|out| out.status.success()) {
            eprintln!(
                "warning: could not remove label {} from {SECOND_NODE}",
                self.key
            );
        }
    }
}

fn unscheduled_reason(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.reason.clone())
}

#[tokio::test]
async fn a_pod_created_before_a_node_scoped_window_is_steered_off_its_nodes() {
    with_namespace("steering", |client, ns| async move {
        let key = format!("e2e.lifeguard.dev/{}", unique_name("steer"));
        let label = NodeLabel {
            nodes: Api::all(client.clone()),
            key: key.clone(),
        };
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let ws = workspace("early")
            .pod_spec(json!({"nodeSelector": {&key: "yes"}}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &ws).await?;
        let pod = pod_name("early");
        let first = wait_for(&pods, &pod, TIMEOUT, "the pod unschedulable", |p| {
            unscheduled_reason(p).as_deref() == Some("Unschedulable")
        })
        .await?;
        let first_uid = first.metadata.uid.clone().unwrap_or_default();

        let window = unique_name("e2e-steer");
        let now = Timestamp::now();
        let mw: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": window},
            "spec": {
                "start": rfc3339(now - SignedDuration::from_secs(60)),
                "end": rfc3339(now + SignedDuration::from_mins(30)),
                "drain": true,
                "nodeSelector": {"matchLabels": {&key: "yes"}},
                "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: &ns}},
            }
        }))?;
        Api::<MaintenanceWindow>::all(client.clone())
            .create(&PostParams::default(), &mw)
            .await?;
        let result = async {
            wait_workspace_events(&client, &ns, "early", &["PodDeleted"]).await?;
            let events = events_about(&client, Some(&ns), "Workspace", "early").await?;
            anyhow::ensure!(
                events
                    .iter()
                    .any(|(reason, note)| reason == "PodDeleted" && note.contains(&window)),
                "the Event names the window: {events:?}"
            );
            let second = wait_for(&pods, &pod, TIMEOUT, "a new pod, steered", |p| {
                p.metadata.uid.as_deref() != Some(first_uid.as_str())
                    && p.metadata.deletion_timestamp.is_none()
            })
            .await?;
            let affinity =
                serde_json::to_string(&second.spec.as_ref().and_then(|s| s.affinity.clone()))?;
            anyhow::ensure!(
                affinity.contains(&key) && affinity.contains("NotIn"),
                "the new pod is kept off the window's nodes: {affinity}"
            );
            let early = workspaces.get("early").await?;
            let status = early.status.unwrap_or_default();
            anyhow::ensure!(
                status.pod_starts == 2
                    && status.phase != Some(WorkspacePhase::Stopped)
                    && status.phase != Some(WorkspacePhase::Failed),
                "the workspace starts again rather than stopping: {status:?}"
            );

            // Node 2 now has what the pod asks for, and is one of the window's nodes. A plain
            // pod asking the same is placed there: the scheduler has seen the label, and has
            // looked again at the pods it could not place; the steered one stays unplaced.
            label.set(Some("yes")).await?;
            let control: Pod = serde_json::from_value(json!({
                "metadata": {"name": "control"},
                "spec": {
                    "nodeSelector": {&key: "yes"},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": BUSYBOX_IMAGE,
                        "imagePullPolicy": "Never", "command": ["sleep", "3600"],
                        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}}}]
                }
            }))?;
            pods.create(&PostParams::default(), &control).await?;
            wait_for(
                &pods,
                "control",
                TIMEOUT,
                "the plain pod placed on node 2",
                |p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(SECOND_NODE),
            )
            .await?;
            let seen = pods.get(&pod).await?;
            anyhow::ensure!(
                seen.metadata.uid == second.metadata.uid
                    && seen
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.as_deref())
                        .is_none(),
                "the steered pod stays off node 2: {:?}",
                seen.status
            );
            Ok(())
        }
        .await;
        close_window(&client, &window).await;
        let _ = workspaces.delete("early", &DeleteParams::default()).await;
        label.set(None).await?;
        result
    })
    .await;
}
