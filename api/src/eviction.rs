//! Evictions of workspace pods, the parts the webhook and the controller share. The
//! webhook answers an eviction of a running workspace pod 429 and records it on the
//! Workspace ([`EVICTION_ANNOTATION`]); the controller stops that pod gracefully and, once
//! it is gone, starts the workspace again (or leaves it stopped, [`OnEviction::Stop`]),
//! recording the eviction it acted on in `status.lastEviction`.

use kube::ResourceExt;

use crate::Workspace;
use crate::names::EVICTION_ANNOTATION;
pub use crate::workspace::{EvictionRecord, OnEviction};

/// Ready condition reason (and Event reason) of a workspace stopped by an eviction.
pub const REASON_EVICTED: &str = "Evicted";

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
