//! The `DisposalReceipt` custom resource: a node agent's answer in the disposal handshake
//! that needs no right to write pods.
//!
//! Answering on the pod (`lifeguard.dev/disposal-result`) needs `patch pods`, which RBAC
//! cannot narrow to one annotation, to workspace pods or to the agent's own node: whoever
//! holds it can change any pod's image and run code as that pod's ServiceAccount. Before
//! Kubernetes 1.30 (no ValidatingAdmissionPolicy) nothing else can narrow it. A receipt
//! turns the answer into an object of its own: the agent only *creates* receipts, in the
//! pod's namespace, named after the pod's UID and owned by the pod, so the garbage collector
//! removes each one with its pod. The agent can neither change nor delete a receipt once
//! made, so the first answer stands. What a holder of that right can still do is answer for
//! a waiting pod it did not save (docs/operations.md, "Security model").

use k8s_openapi::api::core::v1::Pod;
use kube::{CustomResource, Resource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::disposal::DisposalResult;

/// Longest `reason` kept: an agent's explanation, not a log.
pub const MAX_REASON_LEN: usize = 1024;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "lifeguard.dev",
    version = "v1alpha1",
    kind = "DisposalReceipt",
    plural = "disposalreceipts",
    namespaced,
    printcolumn = r#"{"name":"Pod","type":"string","jsonPath":".spec.podName"}"#,
    printcolumn = r#"{"name":"Result","type":"string","jsonPath":".spec.result"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DisposalReceiptSpec {
    /// The stopping workspace pod this answers for.
    #[schemars(length(min = 1, max = 253))]
    pub pod_name: String,
    /// That pod's UID; also the receipt's name, so a pod has at most one receipt.
    #[serde(rename = "podUID")]
    #[schemars(length(min = 1, max = 64))]
    pub pod_uid: String,
    /// Whether the agent saved the pod's work.
    pub result: ReceiptResult,
    /// Why saving failed, in the agent's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ReceiptResult {
    Saved,
    Failed,
}

/// What a receipt found for a pod means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiptReading {
    /// The receipt answers for this pod.
    Answer(DisposalResult),
    /// The receipt does not belong to this pod; it is ignored, and the reason is reported.
    Ignored(String),
}

/// Reads `receipt` as an answer for `pod`. A receipt counts only when its name and
/// `podUID` are the pod's UID, its `podName` the pod's name, and the pod owns it (so it
/// goes with the pod): anything else is another pod's receipt or a forgery, and must not
/// release this pod's work.
pub fn read(receipt: &DisposalReceipt, pod: &Pod) -> ReceiptReading {
    let meta = pod.meta();
    let (Some(uid), Some(name)) = (meta.uid.as_deref(), meta.name.as_deref()) else {
        return ReceiptReading::Ignored("the pod has no name or UID".into());
    };
    let receipt_name = receipt.metadata.name.as_deref().unwrap_or_default();
    if receipt_name != uid || receipt.spec.pod_uid != uid {
        return ReceiptReading::Ignored(format!(
            "receipt {receipt_name} names pod UID {:?}, not {uid:?}",
            receipt.spec.pod_uid
        ));
    }
    if receipt.spec.pod_name != name {
        return ReceiptReading::Ignored(format!(
            "receipt {receipt_name} names pod {:?}, not {name:?}",
            receipt.spec.pod_name
        ));
    }
    let owned = receipt
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "Pod" && o.uid == uid && o.name == name);
    if !owned {
        return ReceiptReading::Ignored(format!(
            "receipt {receipt_name} is not owned by pod {name} (set an ownerReference to the pod so it is removed with it)"
        ));
    }
    ReceiptReading::Answer(match receipt.spec.result {
        ReceiptResult::Saved => DisposalResult::Saved,
        ReceiptResult::Failed => DisposalResult::Failed(
            receipt
                .spec
                .reason
                .as_deref()
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(|r| r.chars().take(MAX_REASON_LEN).collect())
                .unwrap_or_else(|| "no reason given".to_string()),
        ),
    })
}

/// The receipt an agent makes for `pod`: named after its UID, owned by it. `None` for a
/// pod without a name or UID (never one the API server returned).
pub fn for_pod(
    pod: &Pod,
    result: ReceiptResult,
    reason: Option<String>,
) -> Option<DisposalReceipt> {
    let meta = pod.meta();
    let uid = meta.uid.clone()?;
    let name = meta.name.clone()?;
    let mut receipt = DisposalReceipt::new(
        &uid,
        DisposalReceiptSpec {
            pod_name: name.clone(),
            pod_uid: uid.clone(),
            result,
            reason: reason.map(|r| r.chars().take(MAX_REASON_LEN).collect()),
        },
    );
    receipt.metadata.namespace = meta.namespace.clone();
    // No blockOwnerDeletion: setting it needs rights on the pod the agent does not have.
    receipt.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name,
            uid,
            ..Default::default()
        },
    ]);
    Some(receipt)
}

#[cfg(test)]
#[path = "receipt_tests.rs"]
mod receipt_tests;
