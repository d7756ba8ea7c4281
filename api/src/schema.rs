//! Schema helpers for fields whose full OpenAPI schema would not serve users.

use schemars::{Schema, SchemaGenerator, json_schema};

/// An embedded pod template: the full PodSpec schema would make the CRD several hundred
/// kilobytes and tie it to one Kubernetes version's PodSpec, so the API server keeps the
/// object as given and lifeguard checks it by decoding it into the real `PodTemplateSpec`.
pub fn pod_template(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "The pod to run for this workspace (metadata and spec, as in a Deployment's template).",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// An optional `WorkspacePhase`. schemars lists `null` among the enum values of an
/// `Option<enum>`, which older API servers (1.20 among them) refuse in a CRD; absence
/// already means "unset".
pub fn optional_phase(_: &mut SchemaGenerator) -> Schema {
    let phases: Vec<&str> = crate::WorkspacePhase::ALL
        .iter()
        .map(|p| p.as_str())
        .collect();
    json_schema!({
        "type": "string",
        "enum": phases,
        "description": "Where the workspace is in its life."
    })
}

/// An optional `RejectionClass`, for the same reason as [`optional_phase`].
pub fn optional_rejection_class(_: &mut SchemaGenerator) -> Schema {
    let classes: Vec<&str> = crate::rejection::RejectionClass::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    json_schema!({
        "type": "string",
        "enum": classes,
        "description": "Transient: the pod is re-created. Permanent: re-creating cannot help."
    })
}

/// An optional `OnEviction`, for the same reason as [`optional_phase`].
pub fn optional_on_eviction(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "enum": ["Restart", "Stop"],
        "description": "What follows an eviction of the workspace's pod once lifeguard has saved it: Restart (default) starts it again on another node, Stop leaves it Stopped."
    })
}
