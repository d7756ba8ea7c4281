//! A ResourceQuota of 0 pods: the API server refuses every pod create in a namespace, the
//! way a full quota or another admission plugin does in production.

use std::time::Duration;

use k8s_openapi::api::core::v1::ResourceQuota;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use crate::{wait_for, wait_gone};

const QUOTA: &str = "e2e-no-pods";
const TIMEOUT: Duration = Duration::from_secs(60);

/// From now on pod creates in `ns` are refused ("exceeded quota").
pub async fn forbid_pods(client: &Client, ns: &str) -> anyhow::Result<()> {
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": QUOTA}, "spec": {"hard": {"pods": "0"}}
    }))?;
    quotas.create(&PostParams::default(), &quota).await?;
    // The quota admission plugin refuses only once the quota controller has counted usage.
    wait_for(&quotas, QUOTA, TIMEOUT, "usage counted", |q| {
        q.status.as_ref().and_then(|s| s.used.as_ref()).is_some()
    })
    .await?;
    Ok(())
}

/// Pod creates in `ns` are allowed again.
pub async fn allow_pods(client: &Client, ns: &str) -> anyhow::Result<()> {
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    quotas.delete(QUOTA, &DeleteParams::default()).await?;
    wait_gone(&quotas, QUOTA, TIMEOUT).await
}
