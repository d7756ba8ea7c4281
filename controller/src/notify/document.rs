//! Which document each transition sends. Pure: the window's status before and after a
//! pass, a workspace's notice change, a workspace a drain asks to stop in; documents out.
//!
//! Every document carries an `id` built from what it is about (kind, window, occurrence
//! start, workspace), not from when it was seen: a document re-sent after a lost answer, a
//! failed status write or a leader change has the same id, so a receiver de-duplicates on
//! it (delivery is at least once).

use jiff::Timestamp;
use kube::ResourceExt;
use lifeguard_api::Workspace;
use lifeguard_api::eviction::EvictionNotice;
use lifeguard_api::maintenance::OccurrenceStatus;
use lifeguard_api::notice::MaintenanceNotice;
use serde::Serialize;

use crate::notice::{REASON_SCHEDULED, REASON_WITHDRAWN};

/// The `version` of the documents this controller sends; a change that drops or renames a
/// field gets a new version, added fields do not.
pub const VERSION: &str = "lifeguard.dev/notification/v1";

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// An occurrence of the window began: new workspaces are refused (and a drain starts).
    WindowStart,
    /// The occurrence is over (or was cut short: the window was suspended or changed).
    WindowEnd,
    /// A workspace was told of a coming drain (its `MaintenanceScheduled` condition).
    Notice,
    /// A notice was taken back before its occurrence: the window changed, was suspended or
    /// deleted.
    NoticeWithdrawn,
    /// A drain asked a workspace to stop.
    DrainStop,
    /// An eviction (kubectl drain, a node upgrade, an autoscaler) is about to stop a
    /// workspace: it was told, and its stop starts at `eviction.stopAt`. It has no window.
    EvictionStop,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::WindowStart,
        Kind::WindowEnd,
        Kind::Notice,
        Kind::NoticeWithdrawn,
        Kind::DrainStop,
        Kind::EvictionStop,
    ];

    /// As in the document and the metrics' `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::WindowStart => "windowStart",
            Kind::WindowEnd => "windowEnd",
            Kind::Notice => "notice",
            Kind::NoticeWithdrawn => "noticeWithdrawn",
            Kind::DrainStop => "drainStop",
            Kind::EvictionStop => "evictionStop",
        }
    }
}

/// The window and the occurrence a document is about.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct WindowRef {
    pub name: String,
    /// The occurrence, RFC 3339 UTC.
    pub start: String,
    pub end: String,
}

/// The workspace a document is about, and the node its pod ran on when it was seen.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceRef {
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// The eviction an `evictionStop` document is about.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EvictionRef {
    /// The user of the eviction request.
    pub by: String,
    /// The node the pod is evicted from.
    pub node: String,
    /// When the eviction was first asked, RFC 3339 UTC.
    pub evicted_at: String,
    /// When the stop starts (`--eviction-notice` after the notice), RFC 3339 UTC.
    pub stop_at: String,
}

/// One document, as posted in the `json` format.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub version: &'static str,
    pub kind: Kind,
    /// Receivers de-duplicate on this (see the module documentation).
    pub id: String,
    /// When the controller saw the transition, RFC 3339 UTC.
    pub time: String,
    /// `--notify-cluster`, set by the notifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Every kind but `evictionStop`, which no window causes, has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRef>,
    /// Only `evictionStop` has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction: Option<EvictionRef>,
    /// The window's `message`, as the operator wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// One line for a person (a chat message, a mail subject).
    pub summary: String,
}

pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn window_ref(name: &str, start: Timestamp, end: Timestamp) -> WindowRef {
    WindowRef {
        name: name.to_string(),
        start: rfc3339(start),
        end: rfc3339(end),
    }
}

fn id(kind: Kind, window: &WindowRef, workspace: Option<&WorkspaceRef>) -> String {
    let mut id = format!("{}/{}/{}", kind.as_str(), window.name, window.start);
    if let Some(ws) = workspace {
        id.push_str(&format!("/{}/{}", ws.namespace, ws.name));
    }
    id
}

fn document(
    kind: Kind,
    window: WindowRef,
    workspace: Option<WorkspaceRef>,
    message: Option<&str>,
    summary: String,
    now: Timestamp,
) -> Notification {
    Notification {
        version: VERSION,
        kind,
        id: id(kind, &window, workspace.as_ref()),
        time: rfc3339(now),
        cluster: None,
        window: Some(window),
        workspace,
        eviction: None,
        message: message.map(str::to_string),
        summary,
    }
}

/// The start and end documents of window `name` when a pass moves its current occurrence
/// from `before` (the stored status) to `after`: the old occurrence ends before the new one
/// starts. The same occurrence (same start; an extended end is not a new start) sends
/// nothing.
pub fn window_transitions(
    name: &str,
    message: Option<&str>,
    before: Option<&OccurrenceStatus>,
    after: Option<&OccurrenceStatus>,
    now: Timestamp,
) -> Vec<Notification> {
    let same =
        |a: Option<&OccurrenceStatus>, b: &OccurrenceStatus| a.is_some_and(|a| a.start == b.start);
    let mut out = Vec::new();
    if let Some(old) = before.filter(|old| !same(after, old)) {
        let window = window_ref(name, old.start.0, old.end.0);
        let early = now < old.end.0;
        let summary = if early {
            format!(
                "maintenance window {name} ended early at {} (scheduled until {})",
                rfc3339(now),
                window.end
            )
        } else {
            format!("maintenance window {name} is over; workspaces may start again")
        };
        out.push(document(
            Kind::WindowEnd,
            window,
            None,
            message,
            summary,
            now,
        ));
    }
    if let Some(new) = after.filter(|new| !same(before, new)) {
        let window = window_ref(name, new.start.0, new.end.0);
        let summary = format!(
            "maintenance window {name} is active until {}; new workspaces are refused",
            window.end
        );
        out.push(document(
            Kind::WindowStart,
            window,
            None,
            message,
            summary,
            now,
        ));
    }
    out
}

fn workspace_ref(ws: &Workspace) -> WorkspaceRef {
    WorkspaceRef {
        namespace: ws.namespace().unwrap_or_default(),
        name: ws.name_any(),
        node: ws.status.as_ref().and_then(|s| s.node_name.clone()),
    }
}

/// The document of a workspace's notice change (`notice::step`'s Event `reason`): a notice
/// given (`desired`) or withdrawn (the notice `ws` carried). Other changes (the occurrence
/// is over, the workspace stopped) explain themselves by the window's end or the drain
/// stop and send nothing.
pub fn notice_change(
    ws: &Workspace,
    reason: &str,
    desired: Option<&MaintenanceNotice>,
    now: Timestamp,
) -> Option<Notification> {
    let workspace = workspace_ref(ws);
    let (kind, notice) = match reason {
        REASON_SCHEDULED => (Kind::Notice, desired?),
        REASON_WITHDRAWN => (
            Kind::NoticeWithdrawn,
            ws.status.as_ref()?.maintenance_notice.as_ref()?,
        ),
        _ => return None,
    };
    let window = window_ref(&notice.window, notice.start.0, notice.end.0);
    let summary = match kind {
        Kind::Notice => format!(
            "workspace {}/{} will be stopped by maintenance window {} at {} (until {})",
            workspace.namespace, workspace.name, window.name, window.start, window.end
        ),
        _ => format!(
            "maintenance window {} no longer stops workspace {}/{} at {}",
            window.name, workspace.namespace, workspace.name, window.start
        ),
    };
    Some(document(
        kind,
        window,
        Some(workspace),
        notice.message.as_deref(),
        summary,
        now,
    ))
}

/// The document of a drain asking `ws` (as the API answered the request) to stop, during
/// `occurrence` of window `name`.
pub fn drain_stop(
    name: &str,
    message: Option<&str>,
    occurrence: &OccurrenceStatus,
    ws: &Workspace,
    now: Timestamp,
) -> Notification {
    let workspace = workspace_ref(ws);
    let window = window_ref(name, occurrence.start.0, occurrence.end.0);
    let summary = format!(
        "maintenance window {name} is stopping workspace {}/{}{} (window until {})",
        workspace.namespace,
        workspace.name,
        workspace
            .node
            .as_deref()
            .map(|n| format!(" on node {n}"))
            .unwrap_or_default(),
        window.end
    );
    document(
        Kind::DrainStop,
        window,
        Some(workspace),
        message,
        summary,
        now,
    )
}

/// The document of an evicted workspace `ws` told of its stop (`notice`).
pub fn eviction_stop(ws: &Workspace, notice: &EvictionNotice, now: Timestamp) -> Notification {
    let workspace = WorkspaceRef {
        node: Some(notice.node.clone()),
        ..workspace_ref(ws)
    };
    let eviction = EvictionRef {
        by: notice.by.clone(),
        node: notice.node.clone(),
        evicted_at: rfc3339(notice.evicted_at.0),
        stop_at: rfc3339(notice.stop_at.0),
    };
    let by = if eviction.by.is_empty() {
        "an unnamed user"
    } else {
        &eviction.by
    };
    let summary = format!(
        "{by} evicted workspace {}/{} from node {}; lifeguard stops it at {}, saving its work",
        workspace.namespace, workspace.name, eviction.node, eviction.stop_at
    );
    Notification {
        version: VERSION,
        kind: Kind::EvictionStop,
        // One per eviction of a pod: the first eviction's time tells it from a later one.
        id: format!(
            "{}/{}/{}/{}",
            Kind::EvictionStop.as_str(),
            workspace.namespace,
            workspace.name,
            eviction.evicted_at
        ),
        time: rfc3339(now),
        cluster: None,
        window: None,
        workspace: Some(workspace),
        eviction: Some(eviction),
        message: Some(notice.message.clone()),
        summary,
    }
}

#[cfg(test)]
#[path = "document_tests.rs"]
mod tests;
