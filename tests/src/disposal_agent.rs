//! The binding a platform team makes to let its node agent answer the disposal handshake
//! (manifests/disposal-agent), here for the prober's stand-in agent
//! (`--disposal-standin-save-time=3s` in the local overlay). Shared by the disposal and
//! node-pool tests and the node-drain benchmark.

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;

/// Binds `lifeguard-disposal-agent` to the prober's ServiceAccount; already bound is fine.
pub async fn bind_the_stand_in(client: &Client) -> anyhow::Result<()> {
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "lifeguard-prober-disposal-standin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "lifeguard-disposal-agent"},
        "subjects": [{"kind": "ServiceAccount", "name": "lifeguard-prober", "namespace": "lifeguard-system"}]
    }))?;
    match bindings.create(&PostParams::default(), &binding).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
