//! Evictions of workspace pods, the parts the webhook and the controller share. The
//! webhook answers an eviction of a running workspace pod 429 and records it on the
//! Workspace ([`EVICTION_ANNOTATION`]); the controller stops that pod gracefully and, once
//! it is gone, starts the workspace again (or leaves it stopped, [`OnEviction::Stop`]),
//! recording the eviction it acted on in `status.lastEviction`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Workspace;
use crate::names::EVICTION_ANNOTATION;

/// Ready condition reason (and Event reason) of a workspace stopped by an eviction.
pub const REASON_EVICTED: &str = "Evicted";

/// What becomes of a workspace whose pod was evicted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum OnEviction {
    /// Saved, then started again on another node (the drained node is cordoned).
    #[default]
    Restart,
    /// Saved, then left Stopped until someone starts it.
    Stop,
}

/// One eviction of one workspace pod, as the webhook recorded it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvictionRecord {
    /// The user of the eviction request (an admin's kubectl, an autoscaler's or upgrade
    /// tool's service account).
    pub by: String,
    /// The node the pod was evicted from.
    pub node: String,
    /// The evicted pod's UID: a later pod of the same name is not stopped by this record.
    #[serde(rename = "podUID")]
    pub pod_uid: String,
    /// When the first eviction of this pod was asked.
    pub time: Time,
}

impl EvictionRecord {
    pub fn to_annotation(&self) -> String {
        // A struct of strings always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// "USER evicted it from node NODE", for conditions and Events.
    pub fn describe(&self) -> String {
        let by = if self.by.is_empty() {
            "an unnamed user"
        } else {
            &self.by
        };
        format!("{by} evicted it from node {}", self.node)
    }
}

/// The eviction recorded on `ws`; `None` when there is none or it cannot be read (an
/// unreadable value is treated as absent: the next eviction overwrites it).
pub fn recorded(ws: &Workspace) -> Option<EvictionRecord> {
    ws.annotations()
        .get(EVICTION_ANNOTATION)
        .and_then(|v| serde_json::from_str(v).ok())
}

/// The eviction recorded on `ws` for the pod with this UID.
pub fn recorded_for(ws: &Workspace, pod_uid: Option<&str>) -> Option<EvictionRecord> {
    recorded(ws).filter(|r| Some(r.pod_uid.as_str()) == pod_uid)
}

/// `spec.onEviction`, with its default.
pub fn on_eviction(ws: &Workspace) -> OnEviction {
    ws.spec.on_eviction.unwrap_or_default()
}

/// The recorded eviction this workspace has not acted on yet (its pod is gone).
pub fn pending(ws: &Workspace) -> Option<EvictionRecord> {
    let record = recorded(ws)?;
    let acted = ws
        .status
        .as_ref()
        .and_then(|s| s.last_eviction.as_ref())
        .is_some_and(|last| last.pod_uid == record.pod_uid);
    (!acted).then_some(record)
}
