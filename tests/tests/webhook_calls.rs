//! How often the API server calls lifeguard's webhooks for one workspace from start to stop,
//! with the UPDATE entry's matchConditions as installed and without them, counted by the API
//! server itself (`apiserver_admission_webhook_request_total`), and none for a plain pod.
//! Disruptive (it edits the installed webhook configuration and needs a quiet cluster to
//! count), so `test-all` runs it alone with the other #[ignore]d tests; it prints the counts.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    BUSYBOX_IMAGE, apiserver_counter_sums, wait_gone, wait_phase, wait_settled, with_namespace,
    workspace,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const CONFIGURATION: &str = "lifeguard-validate";
const UPDATE_ENTRY: &str = "resources-update.validate.lifeguard.dev";

/// The API server's calls so far to each of lifeguard's webhooks, by webhook name.
async fn webhook_calls(client: &Client) -> anyhow::Result<BTreeMap<String, f64>> {
    apiserver_counter_sums(client, "apiserver_admission_webhook_request_total", |l| {
        let name = l.get("name");
        name.ends_with(".lifeguard.dev").then(|| name.to_string())
    })
    .await
}

fn difference(
    after: &BTreeMap<String, f64>,
    before: &BTreeMap<String, f64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (v - before.get(k).copied().unwrap_or(0.0)).max(0.0) as u64,
            )
        })
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// One workspace from create to gone: the calls each webhook got meanwhile.
async fn one_workspace(
    client: &Client,
    ns: &str,
    name: &str,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let before = webhook_calls(client).await?;
    let ws = workspace(name).small_requests().build()?;
    workspaces.create(&PostParams::default(), &ws).await?;
    wait_phase(&workspaces, name, WorkspacePhase::Running, TIMEOUT).await?;
    workspaces.delete(name, &DeleteParams::default()).await?;
    wait_gone(&workspaces, name, TIMEOUT).await?;
    Ok(difference(&webhook_calls(client).await?, &before))
}

fn update_entry_index(config: &ValidatingWebhookConfiguration) -> anyhow::Result<usize> {
    config
        .webhooks
        .iter()
        .flatten()
        .position(|w| w.name == UPDATE_ENTRY)
        .with_context(|| format!("{CONFIGURATION} has no webhook {UPDATE_ENTRY}"))
}

#[tokio::test]
#[ignore = "disruptive: edits the installed webhook configuration; test-all runs it alone with --ignored"]
async fn match_conditions_spare_the_webhook_a_workspaces_metadata_writes() {
    with_namespace("webhook-calls", |client, ns| async move {
        wait_settled(&client).await?;
        let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let installed = configs.get(CONFIGURATION).await?;
        let index = update_entry_index(&installed)?;
        let conditions = serde_json::to_value(
            installed.webhooks.as_ref().and_then(|w| w[index].match_conditions.clone()),
        )?;
        ensure!(conditions != Value::Null, "{UPDATE_ENTRY} is installed with matchConditions");

        // A plain pod is never sent to lifeguard (objectSelector).
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let before = webhook_calls(&client).await?;
        let plain: Pod = serde_json::from_value(json!({
            "metadata": {"name": "plain"},
            "spec": {"containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                     "command": ["sleep", "3600"]}],
                     "terminationGracePeriodSeconds": 0}
        }))?;
        pods.create(&PostParams::default(), &plain).await?;
        let plain_calls = difference(&webhook_calls(&client).await?, &before);
        pods.delete("plain", &DeleteParams::default()).await?;

        let with = one_workspace(&client, &ns, "with").await?;
        // The webhooks list merges by name: only this entry's matchConditions change.
        let set = |conditions: &Value| {
            Patch::Strategic(json!({"webhooks": [{"name": UPDATE_ENTRY, "matchConditions": conditions}]}))
        };
        configs
            .patch(CONFIGURATION, &PatchParams::default(), &set(&Value::Null))
            .await?;
        let without = one_workspace(&client, &ns, "without").await;
        configs
            .patch(CONFIGURATION, &PatchParams::default(), &set(&conditions))
            .await?;
        let without = without?;
        println!("webhook calls for a plain pod: {plain_calls:?}");
        println!("webhook calls for one workspace, start to stop, with matchConditions: {with:?}");
        println!("webhook calls for one workspace, start to stop, without them: {without:?}");
        ensure!(plain_calls.is_empty(), "a plain pod reached lifeguard's webhooks: {plain_calls:?}");
        let updates = |calls: &BTreeMap<String, u64>| calls.get(UPDATE_ENTRY).copied().unwrap_or(0);
        ensure!(
            updates(&with) == 0,
            "with matchConditions, the UPDATE entry was called {} times",
            updates(&with)
        );
        ensure!(
            updates(&without) > 0,
            "without matchConditions the metadata writes reach the UPDATE entry: {without:?}"
        );
        Ok(())
    })
    .await;
}
