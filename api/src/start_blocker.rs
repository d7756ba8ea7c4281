//! Why a workspace pod has not started yet, and what can help: the start-blocker
//! catalogue. Pure: a pod (and, for volumes, the message of its latest `FailedMount` or
//! `FailedAttachVolume` Event) in, the blocker out. The controller shows it in the
//! Workspace's `Starting` condition and decides with its class what the start deadline
//! (`spec.startTimeout`) does: a *wait* blocker fails the workspace at the deadline, a
//! *re-create* one replaces the pod on another node (while retries remain), a *permanent*
//! one fails it at once.
//!
//! Sources (kubernetes/kubernetes): `pkg/kubelet/images/types.go` (ErrImagePull,
//! ImagePullBackOff, ErrImageNeverPull, InvalidImageName), `pkg/kubelet/container/sync_result.go`
//! (CreateContainerConfigError, CreateContainerError, RunContainerError, CrashLoopBackOff),
//! `pkg/kubelet/volumemanager/volume_manager.go` and `pkg/volume/util/operationexecutor`
//! (FailedMount, FailedAttachVolume Events), the scheduler's `PodScheduled=False` reason
//! `Unschedulable`.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the start deadline does about a blocker.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum BlockerClass {
    /// It can resolve itself (a Secret created later, a node added, a registry back):
    /// wait, and fail at the deadline.
    Wait,
    /// The node is at fault (a volume that does not mount there, a broken runtime): at the
    /// deadline the pod is re-created, preferring another node, while retries remain.
    Recreate,
    /// The pod's spec can never start: fail at once.
    Permanent,
}

impl BlockerClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Wait => "wait",
            Self::Recreate => "re-create elsewhere",
            Self::Permanent => "permanent",
        }
    }

    /// The `class` label of `lifeguard_controller_start_failures_total`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Wait => "wait",
            Self::Recreate => "recreate",
            Self::Permanent => "permanent",
        }
    }
}

/// The kind of blocker: the reason of the Workspace's `Starting` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockerKind {
    Unschedulable,
    ImagePull,
    ContainerConfig,
    ContainerCreate,
    VolumeMount,
    CrashLoop,
    /// A container waits for a reason this catalogue does not know; its words are shown.
    ContainerWaiting,
}

impl BlockerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unschedulable => "Unschedulable",
            Self::ImagePull => "ImagePull",
            Self::ContainerConfig => "ContainerConfig",
            Self::ContainerCreate => "ContainerCreate",
            Self::VolumeMount => "VolumeMount",
            Self::CrashLoop => "CrashLoop",
            Self::ContainerWaiting => "ContainerWaiting",
        }
    }
}

/// One catalogue entry: the Kubernetes reason, what lifeguard calls it, its class, where
/// the signal is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownBlocker {
    pub reason: &'static str,
    pub kind: BlockerKind,
    pub class: BlockerClass,
    pub signal: &'static str,
    pub why: &'static str,
}

const fn entry(
    reason: &'static str,
    kind: BlockerKind,
    class: BlockerClass,
    signal: &'static str,
    why: &'static str,
) -> KnownBlocker {
    KnownBlocker {
        reason,
        kind,
        class,
        signal,
        why,
    }
}

use BlockerClass::{Permanent, Recreate, Wait};
use BlockerKind::{
    ContainerConfig, ContainerCreate, CrashLoop, ImagePull, Unschedulable, VolumeMount,
};

const WAITING: &str = "container status: state.waiting.reason";
const MOUNT_EVENT: &str = "pod Event (kubelet)";

/// Every blocker lifeguard names. A reason that is not here (a new kubelet's) is shown as
/// `ContainerWaiting` with class Wait: the deadline still ends it.
pub const CATALOGUE: &[KnownBlocker] = &[
    entry(
        "Unschedulable",
        Unschedulable,
        Wait,
        "pod condition PodScheduled=False (scheduler)",
        "no node fits the pod now; a node added or freed can take it",
    ),
    entry(
        "ErrImagePull",
        ImagePull,
        Wait,
        WAITING,
        "the pull failed (registry unreachable, credentials, image not pushed yet)",
    ),
    entry(
        "ImagePullBackOff",
        ImagePull,
        Wait,
        WAITING,
        "the kubelet waits before pulling again",
    ),
    entry(
        "ErrImageNeverPull",
        ImagePull,
        Permanent,
        WAITING,
        "imagePullPolicy: Never and the image is not on the node: no retry pulls it",
    ),
    entry(
        "InvalidImageName",
        ImagePull,
        Permanent,
        WAITING,
        "the image reference cannot be parsed",
    ),
    entry(
        "CreateContainerConfigError",
        ContainerConfig,
        Wait,
        WAITING,
        "a Secret, ConfigMap or key the container names is missing; creating it lets the start go on",
    ),
    entry(
        "CreateContainerError",
        ContainerCreate,
        Recreate,
        WAITING,
        "the node's container runtime could not create the container",
    ),
    entry(
        "RunContainerError",
        ContainerCreate,
        Wait,
        WAITING,
        "the container could not be started (often its command); the kubelet retries",
    ),
    entry(
        "CrashLoopBackOff",
        CrashLoop,
        Wait,
        WAITING,
        "the container starts and exits; the kubelet restarts it with a growing backoff",
    ),
    entry(
        "FailedMount",
        VolumeMount,
        Recreate,
        MOUNT_EVENT,
        "a volume does not mount on this node; another node may mount it (a missing Secret, \
         ConfigMap or claim is Wait instead)",
    ),
    entry(
        "FailedAttachVolume",
        VolumeMount,
        Recreate,
        MOUNT_EVENT,
        "a volume does not attach to this node",
    ),
];

/// The Event reasons whose latest message the controller reads for a pod that is still
/// creating its containers.
pub const MOUNT_EVENT_REASONS: [&str; 2] = ["FailedMount", "FailedAttachVolume"];

/// What holds a pod's start, in the cluster's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartBlocker {
    pub kind: BlockerKind,
    /// The Kubernetes reason (`ErrImagePull`, `FailedMount`, ...).
    pub reason: String,
    pub class: BlockerClass,
    /// Which container and the scheduler's, kubelet's or Event's message.
    pub message: String,
}

fn known(reason: &str) -> Option<&'static KnownBlocker> {
    CATALOGUE.iter().find(|k| k.reason == reason)
}

/// Waiting reasons that only say the kubelet is still at work.
const STILL_STARTING: [&str; 2] = ["ContainerCreating", "PodInitializing"];

/// A mount failing because an object it names does not exist yet is fixed by creating
/// the object, wherever the pod runs.
fn missing_object(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["secret \"", "configmap \"", "persistentvolumeclaim \""]
        .iter()
        .any(|kind| m.contains(kind))
        && m.contains("not found")
}

fn scheduling_blocker(pod: &Pod) -> Option<StartBlocker> {
    let status = pod.status.as_ref()?;
    let condition = status.conditions.as_ref()?.iter().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    })?;
    Some(StartBlocker {
        kind: Unschedulable,
        reason: "Unschedulable".into(),
        class: Wait,
        message: condition.message.clone().unwrap_or_default(),
    })
}

fn container_blocker(c: &ContainerStatus) -> Option<StartBlocker> {
    let waiting = c.state.as_ref()?.waiting.as_ref()?;
    let reason = waiting.reason.as_deref().unwrap_or_default();
    if reason.is_empty() || STILL_STARTING.contains(&reason) {
        return None;
    }
    let words = waiting.message.as_deref().unwrap_or_default();
    let (kind, class) =
        known(reason).map_or((BlockerKind::ContainerWaiting, Wait), |k| (k.kind, k.class));
    let message = match kind {
        ImagePull => format!("container {}: image {:?}: {words}", c.name, c.image),
        CrashLoop => {
            let last = c
                .last_state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .map_or(String::new(), |t| {
                    format!(
                        " with exit code {}{}",
                        t.exit_code,
                        t.reason
                            .as_deref()
                            .map_or(String::new(), |r| format!(" ({r})"))
                    )
                });
            format!(
                "container {} exited{last}, restarted {} times: {words}",
                c.name, c.restart_count
            )
        }
        _ => format!("container {}: {reason}: {words}", c.name),
    };
    Some(StartBlocker {
        kind,
        reason: reason.to_string(),
        class,
        message: message.trim_end_matches([' ', ':']).to_string(),
    })
}

/// Whether the kubelet is still creating a container of the pod: only then is a mount
/// Event the blocker (an old Event of a pod that has since started is not).
pub fn creating_containers(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    let statuses = status
        .init_container_statuses
        .iter()
        .chain(status.container_statuses.iter())
        .flatten();
    let mut any = false;
    for c in statuses {
        any = true;
        let waiting_reason = c
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.as_deref());
        if waiting_reason.is_some_and(|r| STILL_STARTING.contains(&r)) {
            return true;
        }
    }
    // Bound to a node with no container status yet: the kubelet is still setting it up.
    !any && pod.spec.as_ref().is_some_and(|s| s.node_name.is_some())
}

/// The blocker of a pod that is not Ready yet, or `None` while it simply starts.
/// `mount_event` is `(reason, message)` of the pod's latest FailedMount or
/// FailedAttachVolume Event, if the caller looked (only worth it while
/// `creating_containers`).
pub fn blocker(pod: &Pod, mount_event: Option<(&str, &str)>) -> Option<StartBlocker> {
    if let Some(b) = scheduling_blocker(pod) {
        return Some(b);
    }
    if let Some(status) = pod.status.as_ref() {
        // Init containers run first, so theirs is the blocker when they have one; among
        // containers the most decisive class wins (a permanent one fails the start now).
        let found: Vec<StartBlocker> = status
            .init_container_statuses
            .iter()
            .chain(status.container_statuses.iter())
            .flatten()
            .filter_map(container_blocker)
            .collect();
        if let Some(b) = found
            .iter()
            .find(|b| b.class == Permanent)
            .or(found.first())
        {
            return Some(b.clone());
        }
    }
    let (reason, message) = mount_event?;
    if !creating_containers(pod) {
        return None;
    }
    let class = if missing_object(message) {
        Wait
    } else {
        known(reason).map_or(Wait, |k| k.class)
    };
    Some(StartBlocker {
        kind: VolumeMount,
        reason: reason.to_string(),
        class,
        message: message.to_string(),
    })
}

#[cfg(test)]
#[path = "start_blocker_tests.rs"]
mod start_blocker_tests;
