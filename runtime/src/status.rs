//! Status written by server-side apply. The writer sends the whole status it wants; the
//! API server removes what this writer set before and leaves out now, so there is no
//! hand-kept list of fields to null out (a merge patch keeps whatever it does not name,
//! nested fields included). Available from Kubernetes 1.18, so on every supported version.
//!
//! Force: the deployable owns its resources' status; taking a field over from another
//! writer (an operator's `kubectl edit --subresource status`, say) is what it should do.

use std::fmt::Debug;

use kube::Api;
use kube::Resource;
use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The apply configuration that sets `status` on a `K`.
pub fn apply_body<K>(status: &impl Serialize) -> Result<Value, serde_json::Error>
where
    K: Resource<DynamicType = ()>,
{
    Ok(json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": serde_json::to_value(status)?,
    }))
}

/// Applies `status` to the object `name` as field manager `manager`.
pub async fn apply<K>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    status: &impl Serialize,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let body = apply_body::<K>(status).map_err(kube::Error::SerdeError)?;
    api.patch_status(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(&body),
    )
    .await
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Namespace, NamespaceStatus};

    use super::*;

    #[test]
    fn the_apply_configuration_names_the_type_and_carries_only_the_status() {
        let status = NamespaceStatus {
            phase: Some("Active".into()),
            ..NamespaceStatus::default()
        };
        let body = apply_body::<Namespace>(&status).expect("serializable");
        assert_eq!(
            body,
            json!({"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Active"}})
        );
    }
}
