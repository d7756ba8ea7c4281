//! `lifeguard nodes clean`: the last step of an uninstall (docs/operations.md).

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};

use super::emit;
use crate::error::{Error, Result};
use crate::nodes::{condition_removal, taint_removal};

pub async fn clean(client: Client) -> Result<()> {
    let nodes: Api<Node> = Api::all(client);
    let list = nodes
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::kube("listing nodes", e))?;
    let mut report = String::new();
    for node in list.items {
        let name = node.name_any();
        let taints = taint_removal(&node);
        let conditions = condition_removal(&node);
        if !taints.is_empty() {
            let patch: json_patch::Patch = serde_json::from_value(taints.into())
                .map_err(|e| Error::Failed(format!("building the taint patch for {name}: {e}")))?;
            nodes
                .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
                .await
                .map_err(|e| {
                    Error::kube(format!("removing lifeguard's taint from node {name}"), e)
                })?;
            report.push_str(&format!("node/{name}: taint removed\n"));
        }
        if !conditions.is_empty() {
            let patch: json_patch::Patch =
                serde_json::from_value(conditions.into()).map_err(|e| {
                    Error::Failed(format!("building the condition patch for {name}: {e}"))
                })?;
            nodes
                .patch_status(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
                .await
                .map_err(|e| {
                    Error::kube(
                        format!("removing lifeguard's condition from node {name}"),
                        e,
                    )
                })?;
            report.push_str(&format!("node/{name}: condition removed\n"));
        }
    }
    if report.is_empty() {
        report.push_str("no node carries lifeguard's condition or taint\n");
    }
    emit(&report)
}
