//! The bindings a platform team makes to let its node agent answer the disposal handshake
//! (manifests/disposal-agent): for the prober's stand-in agent
//! (`--disposal-standin-save-time=3s` in the local overlay, answering by receipt), shared by
//! the disposal and node-pool tests and the node-drain benchmark; and for a test playing an
//! agent that holds nothing but the narrow receipts role.

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::components::LIFEGUARD_NAMESPACE;

/// The narrow agent role: reads pods, creates receipts, writes no pod.
pub const RECEIPTS_ROLE: &str = "lifeguard-disposal-agent-receipts";

/// Binds `role` to ServiceAccount `account` of lifeguard's namespace; already bound is fine.
async fn bind(client: &Client, binding: &str, role: &str, account: &str) -> anyhow::Result<()> {
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": LIFEGUARD_NAMESPACE}]
    }))?;
    match bindings.create(&PostParams::default(), &binding).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Binds `lifeguard-disposal-agent-receipts` (the narrow role: no pod writes) to the
/// prober's ServiceAccount; already bound is fine.
pub async fn bind_the_stand_in(client: &Client) -> anyhow::Result<()> {
    bind(
        client,
        "lifeguard-prober-disposal-receipts",
        RECEIPTS_ROLE,
        "lifeguard-prober",
    )
    .await
}

/// A client that acts as a backup agent holding only the receipts role: the test's own
/// identity impersonates a ServiceAccount (it need not exist) bound to it.
pub async fn receipts_agent(admin: &Client) -> anyhow::Result<Client> {
    let account = "lifeguard-e2e-receipts-agent";
    bind(admin, account, RECEIPTS_ROLE, account).await?;
    let mut config = crate::cluster::config().await?;
    config.auth_info.impersonate = Some(format!(
        "system:serviceaccount:{LIFEGUARD_NAMESPACE}:{account}"
    ));
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".into(),
        format!("system:serviceaccounts:{LIFEGUARD_NAMESPACE}"),
        "system:authenticated".into(),
    ]);
    Ok(Client::try_from(config)?)
}
