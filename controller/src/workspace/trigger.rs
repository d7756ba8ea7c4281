//! Which Workspace watch events are worth a reconcile. Pure.
//!
//! The reconciler writes each Workspace's status itself, and a pass that writes it plans
//! again with what the write returned; the watch event of that write would only make it
//! read the Workspace and its pod again to find nothing to do. At scale those echoes were
//! most of a start's API calls (docs/benchmarks.md, "Mass start"). So an event passes only
//! when something the reconciler does not write itself changed: the spec (generation),
//! labels, annotations (a drain's `lifeguard.dev/drained-by`), finalizers, the deletion
//! timestamp, or the object itself (a new UID under the same name).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use lifeguard_api::Workspace;
use lifeguard_api::names::workspace_of_pod;
use lifeguard_api::receipt::DisposalReceipt;

/// A fingerprint of what in `meta` calls for a reconcile, for the metadata cache, which
/// keeps no more than the name (`run.rs` stores it in the cached object's `generation`).
pub fn fingerprint(meta: &ObjectMeta) -> i64 {
    let mut hasher = DefaultHasher::new();
    meta.uid.hash(&mut hasher);
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp
        .as_ref()
        .map(|t| t.0.as_millisecond())
        .hash(&mut hasher);
    // Same bits, signed: `generation` is an i64.
    hasher.finish() as i64
}

/// The predicate for `predicate_filter`: the fingerprint `run.rs` left in `generation`.
pub fn fingerprint_in_generation(ws: &PartialObjectMeta<Workspace>) -> Option<u64> {
    ws.metadata.generation.map(|g| g as u64)
}

/// The Workspace a new `DisposalReceipt` answers for, so its stopping pod is released as
/// soon as the agent answers instead of at the confirmation timeout: the workspace of the
/// pod that owns it. Whether the receipt is that pod's is for the reconciler to decide
/// (`lifeguard_api::receipt::read`); this only wakes it.
pub fn workspace_of_receipt(
    receipt: &PartialObjectMeta<DisposalReceipt>,
) -> Option<ObjectRef<PartialObjectMeta<Workspace>>> {
    let namespace = receipt.metadata.namespace.as_deref()?;
    let pod = receipt
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "Pod" && o.api_version == "v1")?;
    let workspace = workspace_of_pod(&pod.name)?;
    Some(ObjectRef::new(workspace).within(namespace))
}

#[cfg(test)]
#[path = "trigger_tests.rs"]
mod tests;
