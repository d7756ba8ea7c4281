//! "Is this workspace told of a coming drain?" Pure: the Workspace, its pod and the notice
//! the windows give it (`lifeguard_api::notice::notice_for`) in; the status change, the
//! Event and the pod annotation patch out.
//!
//! A workspace that still runs (not Stopped, Failed or being deleted) carries the notice of
//! the covering drain window that opens first, from the window's `notice` before the
//! occurrence until it is over: in `status.maintenanceNotice`, as `MaintenanceScheduled=True`
//! and in its pod's `lifeguard.dev/maintenance-notice` annotation, which a downward API
//! volume shows to the IDE in the pod. When the notice goes (the occurrence is over, the
//! window changed, was suspended or deleted, the workspace stopped) the condition turns
//! False, saying why, and the annotation is removed.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use lifeguard_api::names::MAINTENANCE_NOTICE_ANNOTATION;
use lifeguard_api::notice::MaintenanceNotice;
use lifeguard_api::workspace::condition::MAINTENANCE_SCHEDULED;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};
use serde_json::{Value, json};

use crate::status::set_condition;
use crate::workspace::plan::controlled_by;

pub const REASON_SCHEDULED: &str = "MaintenanceScheduled";
pub const REASON_OVER: &str = "MaintenanceOver";
pub const REASON_WITHDRAWN: &str = "NoticeWithdrawn";
pub const REASON_STOPPED: &str = "WorkspaceStopped";

/// Whether a workspace is told of drains at all: only one that still runs or starts.
pub fn eligible(ws: &Workspace) -> bool {
    let phase = ws.phase();
    ws.metadata.deletion_timestamp.is_none()
        && !matches!(
            phase,
            Some(WorkspacePhase::Stopped | WorkspacePhase::Failed)
        )
}

/// A status to write, and the Event (reason, note) that announces it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct NoticeChange {
    pub status: Box<WorkspaceStatus>,
    pub event: Option<(&'static str, String)>,
}

/// The status change that makes `ws` carry `desired` (already `None` for a workspace that
/// is not `eligible`); `None` when it already does.
pub fn step(
    ws: &Workspace,
    desired: Option<&MaintenanceNotice>,
    now: Timestamp,
) -> Option<NoticeChange> {
    let current = ws
        .status
        .as_ref()
        .and_then(|s| s.maintenance_notice.as_ref());
    if current == desired {
        return None;
    }
    let mut status = ws.status.clone().unwrap_or_default();
    status.maintenance_notice = desired.cloned();
    let generation = ws.metadata.generation;
    let event = match (current, desired) {
        (_, Some(notice)) => {
            let text = notice.describe();
            set_condition(
                &mut status.conditions,
                MAINTENANCE_SCHEDULED,
                true,
                REASON_SCHEDULED,
                &text,
                generation,
                now,
            );
            let announced =
                current.is_some_and(|c| c.window == notice.window && c.start == notice.start);
            (!announced).then_some((REASON_SCHEDULED, text))
        }
        (Some(old), None) => {
            let (reason, message) = if now >= old.end.0 {
                (
                    REASON_OVER,
                    format!("maintenance window {} is over", old.window),
                )
            } else if !eligible(ws) {
                (
                    REASON_STOPPED,
                    format!(
                        "the workspace stopped; the notice of maintenance window {} no longer applies",
                        old.window
                    ),
                )
            } else {
                (
                    REASON_WITHDRAWN,
                    format!(
                        "maintenance window {} no longer drains this workspace at {} (changed, suspended or deleted)",
                        old.window, old.start.0
                    ),
                )
            };
            set_condition(
                &mut status.conditions,
                MAINTENANCE_SCHEDULED,
                false,
                reason,
                &message,
                generation,
                now,
            );
            // Only a withdrawn notice is news to the user; the other two explain themselves.
            (reason == REASON_WITHDRAWN).then_some((REASON_WITHDRAWN, message))
        }
        (None, None) => None,
    };
    Some(NoticeChange {
        status: Box::new(status),
        event,
    })
}

/// `status` as it is written for `ws`: a status that stops or fails the workspace also
/// takes its notice back in the same write, so no reader ever sees a Stopped or Failed
/// workspace that is still told of a drain.
pub fn settled(ws: &Workspace, status: WorkspaceStatus, now: Timestamp) -> WorkspaceStatus {
    let ended = matches!(
        status.phase,
        Some(WorkspacePhase::Stopped | WorkspacePhase::Failed)
    );
    if !ended || status.maintenance_notice.is_none() {
        return status;
    }
    let mut after = ws.clone();
    after.status = Some(status);
    match step(&after, None, now) {
        Some(change) => *change.status,
        None => after.status.unwrap_or_default(),
    }
}

/// The merge patch that makes the workspace's own pod carry `desired` in its annotation;
/// `None` when it already does, or the pod is not the workspace's or is going away.
pub fn pod_patch(ws: &Workspace, pod: &Pod, desired: Option<&MaintenanceNotice>) -> Option<Value> {
    if !controlled_by(pod, ws) || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let current = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MAINTENANCE_NOTICE_ANNOTATION));
    let wanted = desired.and_then(|n| serde_json::to_string(n).ok());
    if current == wanted.as_ref() {
        return None;
    }
    Some(json!({"metadata": {"annotations": {MAINTENANCE_NOTICE_ANNOTATION: wanted}}}))
}

#[cfg(test)]
#[path = "notice_tests.rs"]
mod notice_tests;
