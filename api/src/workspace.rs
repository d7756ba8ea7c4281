//! The `Workspace` custom resource: one long-lived pod the controller keeps alive.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rejection::RejectionClass;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "lifeguard.dev",
    version = "v1alpha1",
    kind = "Workspace",
    plural = "workspaces",
    shortname = "ws",
    namespaced,
    status = "WorkspaceStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Pod","type":"string","jsonPath":".status.podName","priority":1}"#,
    printcolumn = r#"{"name":"Node","type":"string","jsonPath":".status.nodeName"}"#,
    printcolumn = r#"{"name":"Recreated","type":"integer","jsonPath":".status.podRecreated"}"#,
    printcolumn = r#"{"name":"Starting","type":"string","jsonPath":".status.conditions[?(@.type==\"Starting\")].reason"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSpec {
    #[schemars(schema_with = "crate::schema::pod_template")]
    pub pod_template: PodTemplateSpec,
    /// Keep the stopped pod until the node's backup agent confirms that the work is saved
    /// (or the controller's `--disposal-confirm-timeout` passes after its containers
    /// stopped). Absent: the controller's
    /// `--confirm-disposal` default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_disposal: Option<bool>,
    /// How long the pod may take to be Ready, such as 10m or 1h (at most 24h). Past it the
    /// workspace fails, or its pod is re-created on another node when the node is at fault
    /// (`start_blocker`). Absent: the controller's `--start-timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timeout: Option<String>,
    /// What follows an eviction of the workspace's pod (`kubectl drain`, a node upgrade,
    /// an autoscaler), once lifeguard has saved it: `Restart` (the default) starts it
    /// again on another node, `Stop` leaves it Stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_on_eviction")]
    pub on_eviction: Option<OnEviction>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum WorkspacePhase {
    Pending,
    Creating,
    Running,
    Stopping,
    Stopped,
    Failed,
}

impl Workspace {
    /// The phase its status records; `None` before the controller first wrote one.
    pub fn phase(&self) -> Option<WorkspacePhase> {
        self.status.as_ref().and_then(|s| s.phase)
    }
}

impl WorkspacePhase {
    pub const ALL: [WorkspacePhase; 6] = [
        Self::Pending,
        Self::Creating,
        Self::Running,
        Self::Stopping,
        Self::Stopped,
        Self::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Creating => "Creating",
            Self::Running => "Running",
            Self::Stopping => "Stopping",
            Self::Stopped => "Stopped",
            Self::Failed => "Failed",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_phase")]
    pub phase: Option<WorkspacePhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// How many times a pod of this workspace was created.
    #[serde(default)]
    pub pod_starts: u32,
    /// How many times a rejected pod was replaced.
    #[serde(default)]
    pub pod_recreated: u32,
    /// When the last rejected pod was confirmed gone; the re-creation backoff counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_deletion_time: Option<Time>,
    /// When the replacement of the last rejected pod is due: `podDeletionTime` plus the
    /// exponential, jittered backoff. Kept here so a restarted controller waits the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_time: Option<MicroTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_rejection: Option<PodRejection>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The API's last refusal to create this workspace's pod (a ResourceQuota, an admission
    /// webhook such as a maintenance window, an invalid spec), until a pod is created. The
    /// retry backoff and the one-Event-per-distinct-error rule are computed from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_create_error: Option<PodCreateError>,
    /// When the current pod was first Ready: its start is over and the start deadline no
    /// longer applies to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_ready_time: Option<Time>,
    /// The coming drain this workspace was told of (a window's `notice`), until its
    /// occurrence is over or the window changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_notice: Option<MaintenanceNotice>,
    /// The last `lifeguard.dev/resume` request this workspace acted on (a window with
    /// `resumeAfter` restarting what it drained): each request restarts it once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<String>,
    /// The last eviction of this workspace's pod that lifeguard acted on (saved the pod,
    /// then restarted or stopped the workspace): who asked, from which node, when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_eviction: Option<EvictionRecord>,
}

/// What the API server answered when it refused to create the pod.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodCreateError {
    /// HTTP status code of the refusal (403 for quotas and admission denials).
    pub code: u16,
    /// The API's machine-readable reason, e.g. `Forbidden`, `Invalid` (empty when it gave
    /// none). Required, not defaulted: Kubernetes 1.20 rejects a `default` inside a
    /// nullable object of a CRD schema.
    pub reason: String,
    pub message: String,
    /// Refusals in a row, of any kind; the retry backoff grows with it.
    pub attempts: u32,
    /// When this same refusal (code, reason and message) was first met.
    pub since: Time,
    /// When the last attempt was refused; the next one is due a backoff later.
    pub time: Time,
}

/// What the kubelet said when it rejected a pod after scheduling.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodRejection {
    /// The rejected pod's UID: tells this rejection from an earlier one of the same name.
    #[serde(default, rename = "podUID", skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    pub reason: String,
    pub message: String,
    pub node: String,
    pub time: Time,
    /// Transient (re-created) or Permanent (the workspace failed at once). Absent in
    /// records written before classes existed, and for a pod refused after it ran (never
    /// re-created, whatever the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_rejection_class")]
    pub class: Option<RejectionClass>,
}

/// Condition types the controller maintains on a Workspace.
pub mod condition {
    pub const POD_REJECTED: &str = "PodRejected";
    pub const READY: &str = "Ready";
    pub const FAILED: &str = "Failed";
    /// True while a pod of this workspace's name exists that this Workspace does not
    /// control (a stranger's, or a predecessor's of the same name); it is left alone.
    pub const POD_CONFLICT: &str = "PodConflict";
    /// True while the API refuses to create the workspace's pod; the message is the API's.
    pub const POD_CREATE_FAILED: &str = "PodCreateFailed";
    /// True while the workspace's pod is bound to a node that has not been Ready for the
    /// controller's `--node-lost-after`, or that was removed.
    pub const NODE_LOST: &str = "NodeLost";
    /// True from a drain window's `notice` until its occurrence is over: the workspace will
    /// be stopped at the start the message names.
    pub const MAINTENANCE_SCHEDULED: &str = "MaintenanceScheduled";
    /// Once a pod that needed its disposal confirmed is released: True when the backup agent
    /// said `saved`; False (reason `AgentFailed` or `TimedOut`) when the work may be lost.
    pub const DISPOSAL_CONFIRMED: &str = "DisposalConfirmed";
    /// True while the current pod is not Ready yet; the reason names what holds it
    /// (`start_blocker::BlockerKind`, or `PodStarting` while nothing does). False once the
    /// pod is Ready (reason `Started`) or the start failed (reason `StartFailed`).
    pub const STARTING: &str = "Starting";
}

/// What a workspace is told: the same facts in its status, its condition and its pod's
/// annotation (`names::MAINTENANCE_NOTICE_ANNOTATION`, this as JSON).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceNotice {
    /// The MaintenanceWindow that will drain the workspace.
    pub window: String,
    /// When the drain starts: the workspace is asked to stop then.
    pub start: Time,
    /// When the occurrence ends; new workspaces may start again after it.
    pub end: Time,
    /// The window's `message`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl MaintenanceNotice {
    /// One line for a condition or an Event.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "maintenance window {} drains this workspace from {} to {}",
            self.window, self.start.0, self.end.0
        );
        if let Some(message) = &self.message {
            text.push_str(": ");
            text.push_str(message);
        }
        text
    }
}

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
