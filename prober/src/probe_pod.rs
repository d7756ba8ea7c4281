//! The throwaway pod of the container check, and how to read its state. Pure.

use k8s_openapi::api::core::v1::{ContainerState, ContainerStatus, Node, Pod};
use serde_json::json;

use crate::error::NoNodeUid;
use crate::verdict::Outcome;

/// Marks throwaway probe pods (value `container`), for the janitor's selector.
pub const PROBE_LABEL: &str = "lifeguard.dev/probe";
/// Unix time after which a throwaway pod is a leftover the janitor may delete.
pub const EXPIRES_LABEL: &str = "lifeguard.dev/probe-expires";
pub const NAME_PREFIX: &str = "lifeguard-probe-";
/// The container writes to the emptyDir, reads it back, and exits 0 only if both worked.
pub const SCRIPT: &str = "echo lifeguard > /probe/ok && test \"$(cat /probe/ok)\" = lifeguard";

pub struct PodParams<'a> {
    pub node: &'a str,
    /// The Node's uid, for the owner reference: a Node deleted and registered again under
    /// the same name is another owner, and the garbage collector reaps the old one's pods.
    pub node_uid: &'a str,
    pub image: &'a str,
    pub pull_policy: &'a str,
    pub expires_unix: i64,
    pub ttl_secs: i64,
}

pub fn selector() -> String {
    format!("{PROBE_LABEL}=container")
}

/// The uid and gid the probe container runs as (`nobody`): fixed and not root, so the
/// pod passes the `restricted` Pod Security level whatever user the image names.
pub const PROBE_UID: i64 = 65534;

/// Tells cluster-autoscaler it may evict the pod when it scales the node down.
pub const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
/// Karpenter's opt-out of disruption; a probe pod must never carry it.
pub const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";

/// The throwaway pod.
///
/// Its controller is the Node it judges (as for the kubelet's mirror pods), so drain tools
/// evict it like any managed pod: `kubectl drain` refuses, without `--force`, only pods
/// with no controller and skips only DaemonSet-controlled ones (k8s.io/kubectl/pkg/drain,
/// `unreplicatedFilter`, `daemonSetFilter`). Not the prober's own pod: that lives in
/// another namespace, and the garbage collector treats an owner in another namespace as
/// absent and deletes the dependent. `blockOwnerDeletion` is left out: setting it needs
/// `update` on `nodes/finalizers`, and nothing should wait for a probe pod to delete a Node.
/// Leftovers go by the expiry label (the janitor), `activeDeadlineSeconds` (the kubelet
/// stops it), with the Node (the garbage collector) and, on uninstall, with the namespace.
pub fn build(p: &PodParams) -> Result<Pod, serde_json::Error> {
    serde_json::from_value(json!({
        "metadata": {
            "generateName": NAME_PREFIX,
            "labels": {PROBE_LABEL: "container", EXPIRES_LABEL: p.expires_unix.to_string()},
            "annotations": {SAFE_TO_EVICT: "true"},
            "ownerReferences": [{
                "apiVersion": "v1",
                "kind": "Node",
                "name": p.node,
                "uid": p.node_uid,
                "controller": true,
            }],
        },
        "spec": {
            // Pinned: the scheduler is not asked, and a NoSchedule taint (ours included)
            // must not keep the check from running on the node it judges.
            "nodeName": p.node,
            "tolerations": [{"operator": "Exists"}],
            "restartPolicy": "Never",
            // The TTL: the kubelet stops the pod even if nobody ever deletes it.
            "activeDeadlineSeconds": p.ttl_secs.max(1),
            "terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            // Pod Security `restricted`, which the probe namespace enforces.
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": PROBE_UID,
                "runAsGroup": PROBE_UID,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [{
                "name": "probe",
                "image": p.image,
                "imagePullPolicy": p.pull_policy,
                "command": ["sh", "-c", SCRIPT],
                "volumeMounts": [{"name": "probe", "mountPath": "/probe"}],
                "resources": {
                    "requests": {"cpu": "1m", "memory": "4Mi"},
                    "limits": {"cpu": "100m", "memory": "16Mi"},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]},
                },
            }],
            "volumes": [{"name": "probe", "emptyDir": {"sizeLimit": "1Mi"}}],
        },
    }))
}

/// Whose fault a probe pod's trouble is. Only the node's faults count against it: the
/// check asks "can this node start a container with a volume?", not "is the probe image
/// pullable?" or "does the API server accept the pod?". Those are inconclusive, so a bad
/// `--probe-image`, a registry outage or a quota never marks a node (or a fleet) unhealthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The node failed: its runtime, its storage, its kernel.
    Node,
    /// Something other than the node: the image, the kubelet's admission, the API.
    NotNode,
}

/// Waiting reasons of a container whose image could not be had: the image reference, the
/// registry or its credentials, or the pull policy, never the node's ability to run
/// containers. From the kubelet's `images` package (`ErrImagePull` ...) and the
/// kuberuntime manager (`InvalidImageName`, `CreateContainerConfigError`: the pod's spec
/// cannot be turned into a container config, e.g. `runAsNonRoot` with an image whose user
/// is a name).
const NOT_THE_NODE_WAITING: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "RegistryUnavailable",
    "SignatureValidationFailed",
    "CreateContainerConfigError",
];

/// Is a container stuck waiting for this reason the node's fault? `ContainerCreating`,
/// `CreateContainerError`, `RunContainerError`, `ImageInspectError` (the runtime cannot
/// read its own image store) and anything unknown are: the node was given a runnable pod
/// and did not run it.
pub fn waiting_blame(reason: &str) -> Blame {
    if NOT_THE_NODE_WAITING.contains(&reason) {
        Blame::NotNode
    } else {
        Blame::Node
    }
}

/// Is a pod that went `Failed` with this `status.reason`, before any container of it ran,
/// the node's fault? Such a pod was refused by the kubelet's admission (`OutOfcpu`,
/// `NodeAffinity`, `Evicted` under node pressure, `NodeShutdown`,
/// `UnexpectedAdmissionError`, `TopologyAffinityError`, ...; the list differs by kubelet
/// version, hence by rule rather than by name): the kubelet reports its own pressure with
/// its own conditions and taints, and a refusal says nothing about whether the node can
/// run a container. The exception is `DeadlineExceeded`: the pod was admitted and did not
/// finish within its `activeDeadlineSeconds`.
pub fn refusal_blame(reason: &str) -> Blame {
    if reason == "DeadlineExceeded" {
        Blame::Node
    } else {
        Blame::NotNode
    }
}

/// Where a throwaway pod is: finished (with the check's outcome) or still on its way, with
/// whose fault it would be if it stayed there until the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    Finished(Outcome),
    Waiting { why: String, blame: Blame },
}

fn ever_ran(status: &ContainerStatus) -> bool {
    let ran = |s: &ContainerState| s.running.is_some() || s.terminated.is_some();
    status.restart_count > 0
        || status.state.as_ref().is_some_and(ran)
        || status.last_state.as_ref().is_some_and(ran)
}

pub fn read(pod: &Pod) -> PodState {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    // The prober deletes its pod only after reading it finished, so a deletion seen before
    // is someone else's: a drain evicting it, the garbage collector. The container is then
    // killed and the pod fails, which says nothing about the node.
    if phase != "Succeeded" && pod.metadata.deletion_timestamp.is_some() {
        return PodState::Finished(Outcome::Unknown(
            "the probe pod was deleted before it finished (evicted by a drain?)".into(),
        ));
    }
    let container = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first());
    let terminated = container
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    match phase {
        "Succeeded" => return PodState::Finished(Outcome::Success),
        "Failed" => {
            let reason = status.and_then(|s| s.reason.as_deref());
            let message = status.and_then(|s| s.message.as_deref()).unwrap_or("");
            let outcome = match (terminated, reason) {
                (Some(t), _) => Outcome::Failure(format!(
                    "probe pod failed: container exited {}{}",
                    t.exit_code,
                    t.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                )),
                (None, Some(r))
                    if !container.is_some_and(ever_ran) && refusal_blame(r) == Blame::NotNode =>
                {
                    Outcome::Unknown(format!("the kubelet refused the probe pod: {r}: {message}"))
                }
                (None, Some(r)) => Outcome::Failure(format!("probe pod failed: {r}: {message}")),
                (None, None) => Outcome::Failure("probe pod failed: no container ran".into()),
            };
            return PodState::Finished(outcome);
        }
        _ => {}
    }
    if let Some(t) = terminated.filter(|t| t.exit_code != 0) {
        return PodState::Finished(Outcome::Failure(format!(
            "probe pod failed: container exited {}",
            t.exit_code
        )));
    }
    let waiting = container
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.waiting.as_ref());
    match waiting {
        Some(w) => {
            let reason = w.reason.as_deref().unwrap_or("unknown reason");
            PodState::Waiting {
                why: format!(
                    "{phase}, container waiting: {reason}{}",
                    w.message
                        .as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
                blame: waiting_blame(reason),
            }
        }
        None if container.is_none() => PodState::Waiting {
            why: format!("{phase}, container not created"),
            blame: Blame::Node,
        },
        None => PodState::Waiting {
            why: phase.to_string(),
            blame: Blame::Node,
        },
    }
}

/// The expiry label of a throwaway pod; a pod without a readable one counts as expired.
pub fn expiry(pod: &Pod) -> i64 {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(EXPIRES_LABEL))
        .and_then(|v| v.parse().ok())
        .unwrap_or(i64::MIN)
}

/// What the container check does on this turn, from its Node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Start a probe pod owned by the Node with this uid.
    Probe { node_uid: String },
    /// The node is cordoned (`spec.unschedulable`): it is being drained or kept empty, and
    /// a probe pod started now would be one more pod for the drain to evict.
    Cordoned,
}

pub fn turn(node: &Node) -> Result<Turn, NoNodeUid> {
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        return Ok(Turn::Cordoned);
    }
    match node.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => Ok(Turn::Probe {
            node_uid: uid.to_string(),
        }),
        _ => Err(NoNodeUid),
    }
}

#[cfg(test)]
#[path = "probe_pod_tests.rs"]
mod tests;
