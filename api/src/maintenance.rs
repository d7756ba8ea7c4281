//! The `MaintenanceWindow` custom resource: when no new workspace may start.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Either a one-off window (`start` and `end`) or a recurring one (`schedule` and
/// `duration`, evaluated in `timeZone`). Times stay strings in the stored object so that a
/// wrong value is reported by lifeguard's validation with a precise message.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "lifeguard.dev",
    version = "v1alpha1",
    kind = "MaintenanceWindow",
    plural = "maintenancewindows",
    shortname = "mw",
    status = "MaintenanceWindowStatus",
    printcolumn = r#"{"name":"Active","type":"boolean","jsonPath":".status.active"}"#,
    printcolumn = r#"{"name":"Ends","type":"string","jsonPath":".status.currentOccurrence.end"}"#,
    printcolumn = r#"{"name":"Next Start","type":"string","jsonPath":".status.nextOccurrence.start"}"#,
    printcolumn = r#"{"name":"Drain","type":"boolean","jsonPath":".spec.drain"}"#,
    printcolumn = r#"{"name":"Remaining","type":"integer","jsonPath":".status.workspacesRemaining"}"#,
    printcolumn = r#"{"name":"In Flight","type":"integer","jsonPath":".status.workspacesInFlight","priority":1}"#,
    printcolumn = r#"{"name":"Paused","type":"boolean","jsonPath":".spec.drainPaused","priority":1}"#,
    printcolumn = r#"{"name":"Notified","type":"integer","jsonPath":".status.workspacesNotified","priority":1}"#,
    printcolumn = r#"{"name":"Suspended","type":"boolean","jsonPath":".spec.suspend","priority":1}"#,
    printcolumn = r#"{"name":"Enforcement","type":"string","jsonPath":".spec.enforcement","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindowSpec {
    /// One-off window start, RFC 3339 (for example `2026-12-01T22:00:00Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// One-off window end, RFC 3339; must be after `start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// Recurring window: a schedule in Kubernetes CronJob's language: 5 fields (minute hour
    /// day-of-month month day-of-week) or a macro such as `@weekly`; see docs/schedule.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Length of each recurring occurrence, for example `2h` or `1h30m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// IANA time zone the schedule is read in (default `UTC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Namespaces covered (by their labels); absent or empty covers all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Workspaces covered (by the Workspace's labels, or a workspace pod's labels); absent or empty covers all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_selector: Option<LabelSelector>,
    /// Shown to whoever is denied during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Also stop running covered workspaces when the window opens.
    #[serde(default)]
    pub drain: bool,
    /// With `drain`: how long before each occurrence opens the covered running workspaces
    /// are told that it will stop them (a `MaintenanceScheduled` condition and Event on the
    /// Workspace, an annotation on its pod), for example `15m`. At most 7 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// Nodes covered (by the Node's labels), combined with the other selectors: while the
    /// window is active, covered workspace pods are kept off these nodes instead of being
    /// denied, `drain` stops only covered workspaces running on them, and each selected
    /// node carries `lifeguard.dev/drained`. Absent: the whole cluster, as without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// With `drain`: at most this many covered workspaces are being stopped at once (until
    /// their pod is gone), an integer such as `2` or a percentage such as `25%` of the
    /// workspaces the window drains. Absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_drains: Option<IntOrString>,
    /// With `drain`: start no new stops (those in flight finish); the window's other
    /// effects stay.
    #[serde(default)]
    pub drain_paused: bool,
    /// Let the controller re-create rejected pods of already-admitted workspaces during the window.
    #[serde(default)]
    pub allow_recreation: bool,
    /// Disable the window without deleting it.
    #[serde(default)]
    pub suspend: bool,
    /// Recurring windows only: periods in which no occurrence happens. An occurrence that
    /// overlaps one is skipped whole (see docs/schedule.md). At most 50.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub exclusions: Vec<ExclusionSpec>,
    /// `Enforce` (default) denies, steers and drains; `Warn` admits with a warning naming
    /// the window; `DryRun` admits silently. Neither `Warn` nor `DryRun` steers or drains:
    /// both count what they would have done (metrics, `status.dryRun`).
    #[serde(default, skip_serializing_if = "Enforcement::is_enforce")]
    pub enforcement: Enforcement,
    /// With `drain`: gates that hold the drain (no new stops; those in flight finish)
    /// while it is unsafe. A gate that cannot be evaluated holds. See docs/operations.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_while: Option<HoldWhileSpec>,
    /// With `holdWhile`: the longest one hold lasts, for example `30m` (at most 7 days);
    /// after it the drain proceeds for the rest of the occurrence, with a Warning Event.
    /// Absent: a hold lasts at most until the occurrence ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hold: Option<String>,
    /// With `drain`: the longest a Workspace's owner may postpone its stop, counted from the
    /// occurrence's start, for example `30m` (at most 24h, shorter than an occurrence). An
    /// owner asks with the annotation `lifeguard.dev/postpone-drain: 20m` or `lifeguard
    /// workspaces postpone NAME --for 20m`; the drain stops the workspace at the start plus
    /// the lesser of the two. Absent: no workspace is postponed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_postpone: Option<String>,
    /// With `drain`: once an occurrence is over, restart the workspaces it drained (their
    /// pods re-created, nothing else changed), at most `maxConcurrentDrains` starting at
    /// once. Not restarted: a workspace being deleted, Failed, or one whose drained marks
    /// were removed. Default: drained workspaces stay stopped.
    #[serde(default)]
    pub resume_after: bool,
}

/// What holds a drain; each gate given holds on its own.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HoldWhileSpec {
    /// Hold while this instant query returns any series (the controller's
    /// `--prometheus-url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusGateSpec>,
    /// Hold while a pod matching this selector is Running in a namespace the window covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<PodsGateSpec>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusGateSpec {
    /// PromQL, for example `ALERTS{alertstate="firing",severity="critical"}`.
    pub query: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodsGateSpec {
    pub selector: LabelSelector,
}

/// One period in which a recurring window does not open.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExclusionSpec {
    /// RFC 3339 time with an offset (inclusive), or a date `YYYY-MM-DD`: from the start of
    /// that day in the window's `timeZone`.
    pub start: String,
    /// RFC 3339 time with an offset (exclusive), or a date `YYYY-MM-DD`: to the end of that
    /// day in the window's `timeZone` (the day is included).
    pub end: String,
    /// Why the occurrences are skipped; shown in status and `lifeguard maintenance next`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub reason: Option<String>,
}

/// What a window does while active.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Enforcement {
    /// Deny covered starts, steer off selected nodes, drain.
    #[default]
    Enforce,
    /// Admit covered starts with an admission warning; no steering, no drain.
    Warn,
    /// Admit silently; no steering, no drain; count what would have happened.
    DryRun,
}

impl Enforcement {
    pub fn is_enforce(&self) -> bool {
        *self == Self::Enforce
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Enforce => "Enforce",
            Self::Warn => "Warn",
            Self::DryRun => "DryRun",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindowStatus {
    #[serde(default)]
    pub active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_occurrence: Option<OccurrenceStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_occurrence: Option<OccurrenceStatus>,
    /// While draining: covered workspaces not yet stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_remaining: Option<u32>,
    /// While draining: covered workspaces this occurrence's drain has stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_drained: Option<u32>,
    /// While draining: covered workspaces being stopped now (asked to stop, pod not gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_in_flight: Option<u32>,
    /// While a node-scoped window is active: each selected node and what is left on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeDrainStatus>,
    /// From the notice until the occurrence is over: covered workspaces that carry this
    /// window's notice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_notified: Option<u32>,
    /// While draining: covered workspaces whose owner postponed their stop and whose
    /// postponement has not run out (`spec.maxPostpone`); they count as remaining.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_postponed: Option<u32>,
    /// With `resumeAfter`, after an occurrence: workspaces it drained that are not running
    /// again yet (asked to start, or waiting for the budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_resuming: Option<u32>,
    /// Occurrences an exclusion skips, from the one in force now up to `nextOccurrence`
    /// (at most 10), each with the exclusion's reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_occurrences: Vec<SkippedOccurrenceStatus>,
    /// While a gate holds the drain (or, `expired`, once `maxHold` let it proceed in this
    /// occurrence): which gate, since when and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldStatus>,
    /// `Warn` and `DryRun` windows while active: what `Enforce` would have done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<DryRunStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkippedOccurrenceStatus {
    pub start: Time,
    pub end: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A drain's hold. `since` is kept across controller restarts: `maxHold` counts from it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HoldStatus {
    /// `prometheus` or `pods`.
    pub gate: String,
    pub since: Time,
    pub message: String,
    /// True once `maxHold` has passed: the drain proceeds for the rest of the occurrence.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// True while no gate holds after one did this occurrence: the drain proceeds, and
    /// `since` is kept, so a gate that clears and holds again does not restart `maxHold`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleared: bool,
}

/// What a `Warn` or `DryRun` window would have done had it been `Enforce`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DryRunStatus {
    /// With `drain`: covered running workspaces the drain would have stopped now.
    pub would_drain: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OccurrenceStatus {
    pub start: Time,
    pub end: Time,
}

/// One selected node of a node-scoped window.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeDrainStatus {
    pub node: String,
    /// Covered workspaces whose pod is still on the node (not yet Stopped or Failed).
    pub workspaces_left: u32,
    /// True once no covered workspace pod is left on the node.
    pub drained: bool,
}

/// Condition types and reasons the controller maintains on a MaintenanceWindow.
pub mod condition {
    /// Whether the spec compiles (a window stored before the webhook could refuse it).
    pub const VALID: &str = "Valid";
    pub const REASON_VALID: &str = "Valid";
    pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
    /// While a `drain: true` window is active: True once every covered workspace stopped.
    pub const DRAINED: &str = "Drained";
    pub const REASON_DRAINED: &str = "Drained";
    pub const REASON_DRAINING: &str = "Draining";
    /// While a `holdWhile` window drains: True while a gate holds it.
    pub const DRAIN_HELD: &str = "DrainHeld";
    /// The `DrainHeld` reason is the gate's name while True (`Prometheus`, `Pods`).
    pub const REASON_GATES_CLEAR: &str = "GatesClear";
    pub const REASON_MAX_HOLD_EXPIRED: &str = "MaxHoldExpired";
}
