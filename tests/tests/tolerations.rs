//! A workspace whose pod template tolerates a taint lifeguard puts on nodes it does not
//! trust (`lifeguard.dev/unproven`, `lifeguard.dev/unhealthy`) may be scheduled onto them:
//! the controller says so with a Warning Event naming the taints, and counts it in
//! `lifeguard_controller_workspace_pods_tolerating_taints_total`. One without such a
//! toleration gets no such Event.

use std::time::Duration;

use kube::api::{Api, PostParams};
use lifeguard_api::names::{NODE_TAINT_KEY, NODE_UNPROVEN_KEY};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{events_about, wait_phase, wait_workspace_events, with_namespace, workspace};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

#[tokio::test]
async fn a_template_tolerating_lifeguards_taints_gets_a_warning() {
    with_namespace("tolerations", |client, ns| async move {
        let api: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let tolerant = workspace("tolerant")
            .pod_spec(json!({"tolerations": [
                {"key": NODE_UNPROVEN_KEY, "operator": "Exists", "effect": "NoSchedule"}]}))
            .small_requests()
            .build()?;
        api.create(&PostParams::default(), &tolerant).await?;
        let plain = workspace("plain").small_requests().build()?;
        api.create(&PostParams::default(), &plain).await?;
        wait_workspace_events(&client, &ns, "tolerant", &["TaintsTolerated"]).await?;
        let notes = events_about(&client, Some(&ns), "Workspace", "tolerant").await?;
        let note = notes
            .iter()
            .find(|(reason, _)| reason == "TaintsTolerated")
            .map(|(_, note)| note.clone())
            .unwrap_or_default();
        anyhow::ensure!(
            note.contains(NODE_UNPROVEN_KEY) && !note.contains(NODE_TAINT_KEY),
            "the Event names the tolerated taint only: {note}"
        );
        wait_phase(&api, "plain", WorkspacePhase::Running, TIMEOUT).await?;
        let plain_events = events_about(&client, Some(&ns), "Workspace", "plain").await?;
        anyhow::ensure!(
            !plain_events
                .iter()
                .any(|(reason, _)| reason == "TaintsTolerated"),
            "a template without such a toleration is not warned: {plain_events:?}"
        );
        Ok(())
    })
    .await;
}
