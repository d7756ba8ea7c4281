//! Is this pod one the kubelet refused? Decided from facts the kubelet leaves in the pod
//! status, never from message text (its wording differs by version: "Pod ..." before 1.26,
//! "Pod was rejected: ..." since). Which reasons are transient or permanent:
//! `lifeguard_api::rejection`.

use k8s_openapi::api::core::v1::{ContainerState, ContainerStatus, Pod};
use lifeguard_api::rejection::{Classifier, RejectionClass, can_be_rejection};

/// The eviction manager's reason. At admission it is a refusal; for a pod that ran it is
/// an ordinary pressure eviction, not a refusal after running.
const EVICTED: &str = "Evicted";

/// What the kubelet said, for the Workspace status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
    pub node: String,
    pub class: RejectionClass,
    /// Bounded metric label (`lifeguard_api::rejection::Classification::label`).
    pub label: String,
}

fn ever_started(status: &ContainerStatus) -> bool {
    let ran = |s: &ContainerState| {
        s.running.is_some()
            || s.terminated
                .as_ref()
                .is_some_and(|t| t.started_at.is_some())
    };
    status.started == Some(true)
        || status.state.as_ref().is_some_and(ran)
        || status.last_state.as_ref().is_some_and(ran)
        || status.restart_count > 0
}

/// The pod is Failed with a reason, and whether any container of it ever started.
fn failed(pod: &Pod) -> Option<(&str, bool)> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Failed") {
        return None;
    }
    let reason = status.reason.as_deref().filter(|r| can_be_rejection(r))?;
    let ran = status
        .container_statuses
        .iter()
        .chain(status.init_container_statuses.iter())
        .flatten()
        .any(ever_started);
    Some((reason, ran))
}

fn record(pod: &Pod, reason: &str, classifier: &Classifier) -> Rejection {
    let classification = classifier.classify(reason);
    Rejection {
        reason: reason.to_string(),
        message: pod
            .status
            .as_ref()
            .and_then(|s| s.message.clone())
            .unwrap_or_default(),
        node: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
        class: classification.class,
        label: classification.label,
    }
}

/// `Some` when the pod is Failed with a reason and no container of it ever started: the
/// kubelet refused it at admission. Reasons the catalogue does not know count too (as
/// transient), so a reason a newer kubelet invents is retried rather than fatal.
pub fn rejection(pod: &Pod, classifier: &Classifier) -> Option<Rejection> {
    match failed(pod)? {
        (reason, false) => Some(record(pod, reason, classifier)),
        (_, true) => None,
    }
}

/// `Some` when a pod whose containers had started is Failed with a known admission reason:
/// the kubelet re-admitted it (after its own restart, Kubernetes #124586) and refused it.
/// Such a pod is not re-created (its work may have side effects), but operators are told.
pub fn rejected_after_running(pod: &Pod, classifier: &Classifier) -> Option<Rejection> {
    match failed(pod)? {
        (reason, true) if reason != EVICTED && classifier.is_known(reason) => {
            Some(record(pod, reason, classifier))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RejectionClass::{Permanent, Transient};
    use serde_json::{Value, json};

    fn pod(status: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "ws-a"}, "spec": {"nodeName": "node-1", "containers": []}, "status": status}))
            .expect("pod literal")
    }

    fn failed_with(reason: &str, message: &str) -> Pod {
        pod(json!({"phase": "Failed", "reason": reason, "message": message}))
    }

    /// Message bodies as the current kubelet writes them (file in the comment); `rejectPod`
    /// in pkg/kubelet/kubelet.go prefixes "Pod was rejected: " (since 1.26; "Pod " before).
    /// The optional second body is older kubelets' wording, with that older prefix, where it
    /// differs: their predicate messages had no description ("Predicate X failed").
    const KUBELET_MESSAGES: &[(&str, &str, Option<&str>, RejectionClass)] = &[
        // lifecycle/predicate.go, PredicateFailureError.Error()
        (
            "NodeAffinity",
            "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
            Some("Predicate NodeAffinity failed"),
            Transient,
        ),
        (
            "NodeName",
            "Predicate NodeName failed: node(s) didn't match the requested node name",
            Some("Predicate NodeName failed"),
            Transient,
        ),
        (
            "NodePorts",
            "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
            Some("Predicate NodePorts failed"),
            Transient,
        ),
        (
            "TaintToleration",
            "Predicate TaintToleration failed: node(s) had untolerated taint(s)",
            None,
            Transient,
        ),
        // lifecycle/predicate.go, InsufficientResourceError.Error()
        (
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 4000, used: 500, capacity: 4000",
            Some(
                "Node didn't have enough resource: cpu, requested: 4000, used: 500, capacity: 4000",
            ),
            Transient,
        ),
        (
            "OutOfmemory",
            "Node didn't have enough resource: memory, requested: 8589934592, used: 0, capacity: 4294967296",
            Some(
                "Node didn't have enough resource: memory, requested: 8589934592, used: 0, capacity: 4294967296",
            ),
            Transient,
        ),
        (
            "OutOfephemeral-storage",
            "Node didn't have enough resource: ephemeral-storage, requested: 10, used: 0, capacity: 5",
            None,
            Transient,
        ),
        (
            "OutOfpods",
            "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110",
            Some("Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"),
            Transient,
        ),
        (
            "OutOfnvidia.com/gpu",
            "Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 1, capacity: 1",
            Some(
                "Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 1, capacity: 1",
            ),
            Transient,
        ),
        // cm/topologymanager/scope.go, lifecycle/predicate.go
        (
            "UnexpectedAdmissionError",
            "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected",
            Some(
                "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
            ),
            Transient,
        ),
        (
            "TopologyAffinityError",
            "Resources cannot be allocated with Topology locality",
            Some("Resources cannot be allocated with Topology locality"),
            Transient,
        ),
        (
            "InvalidNodeInfo",
            "Kubelet cannot get node info.",
            Some("Kubelet cannot get node info."),
            Transient,
        ),
        (
            "VolumeAttachmentLimitExceeded",
            "node has reached its volume attachment limit",
            None,
            Transient,
        ),
        // nodeshutdown/nodeshutdown_manager_linux.go
        (
            "NodeShutdown",
            "Pod was rejected as the node is shutting down.",
            Some("Pod was rejected as the node is shutting down."),
            Transient,
        ),
        // eviction/eviction_manager.go Admit, nodeConditionMessageFmt (issue 12 item 9)
        (
            "Evicted",
            "The node had condition: [DiskPressure]. ",
            Some("The node had condition: [MemoryPressure]. "),
            Transient,
        ),
        (
            "UnknownReason",
            "GeneralPredicates failed due to unknown reason, which is unexpected.",
            Some("GeneralPredicates failed due to unknown reason, which is unexpected."),
            Transient,
        ),
        (
            "UnexpectedPredicateFailureType",
            "GeneralPredicates failed due to &{x}, which is unexpected.",
            Some("GeneralPredicates failed due to &{x}, which is unexpected."),
            Transient,
        ),
        (
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
            None,
            Permanent,
        ),
        (
            "PodOSNotSupported",
            "Failed to admit pod as the OS field doesn't match node OS",
            None,
            Permanent,
        ),
        (
            "InitContainerRestartPolicyForbidden",
            "Init container \"proxy\" may not have a non-default restartPolicy",
            None,
            Permanent,
        ),
        (
            "SupplementalGroupsPolicyNotSupported",
            "SupplementalGroupsPolicy=Strict is not supported in this node",
            None,
            Permanent,
        ),
        // lifecycle/handlers.go
        (
            "PodLevelResourcesNotSupported",
            "PodLevelResources feature gate is disabled",
            None,
            Permanent,
        ),
        (
            "PodFeatureUnsupported",
            "Failed to match pod's feature requirements against the node: ...",
            None,
            Permanent,
        ),
        (
            "AppArmor",
            "Cannot enforce AppArmor: profile \"k8s-deny-write\" is not loaded",
            Some("Cannot enforce AppArmor: profile \"k8s-deny-write\" is not loaded"),
            Permanent,
        ),
        // sysctl/allowlist.go
        (
            "SysctlForbidden",
            "forbidden sysctl: \"kernel.msgmax\" not allowlisted",
            Some("forbidden sysctl: \"kernel.msgmax\" not whitelisted"),
            Permanent,
        ),
    ];

    #[test]
    fn every_kubelet_refusal_is_recognised_in_both_message_forms() {
        let classifier = Classifier::default();
        for (reason, current, legacy, class) in KUBELET_MESSAGES {
            let mut forms = vec![format!("Pod was rejected: {current}")];
            forms.extend(legacy.map(|m| format!("Pod {m}")));
            for message in forms {
                let got = rejection(&failed_with(reason, &message), &classifier)
                    .unwrap_or_else(|| panic!("{reason}: {message} not recognised"));
                assert_eq!(
                    (got.reason.as_str(), got.class, got.node.as_str()),
                    (*reason, *class, "node-1"),
                    "{message}"
                );
                assert_eq!(got.message, message, "the kubelet's message is kept");
            }
        }
    }

    #[test]
    fn rejections_are_told_from_facts() {
        let classifier = Classifier::default();
        let waiting = json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]);
        // What newer kubelets write for the containers of a pod they refused.
        let unknown = json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown"}}}]);
        let ran = json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": "2026-01-01T00:00:00Z"}}}]);
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            (
                "message wording is irrelevant",
                json!({"phase": "Failed", "reason": "NodeAffinity", "message": "something else entirely"}),
                Some("NodeAffinity"),
            ),
            (
                "waiting containers never started",
                json!({"phase": "Failed", "reason": "OutOfmemory", "containerStatuses": waiting}),
                Some("OutOfmemory"),
            ),
            (
                "containers terminated without ever starting",
                json!({"phase": "Failed", "reason": "OutOfpods", "containerStatuses": unknown}),
                Some("OutOfpods"),
            ),
            (
                "evicted at admission, before anything ran",
                json!({"phase": "Failed", "reason": "Evicted", "message": "Pod The node had condition: [DiskPressure]. ", "containerStatuses": waiting}),
                Some("Evicted"),
            ),
            (
                "a reason no catalogue knows, nothing ran",
                json!({"phase": "Failed", "reason": "SomeFutureReason"}),
                Some("SomeFutureReason"),
            ),
            (
                "evicted after running",
                json!({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory. ", "containerStatuses": ran}),
                None,
            ),
            (
                "a container ran",
                json!({"phase": "Failed", "reason": "OutOfcpu", "containerStatuses": ran}),
                None,
            ),
            (
                "an init container ran",
                json!({"phase": "Failed", "reason": "OutOfcpu", "initContainerStatuses": ran}),
                None,
            ),
            (
                "a container restarted",
                json!({"phase": "Failed", "reason": "NodeAffinity", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 2}]}),
                None,
            ),
            (
                "deadline exceeded while pulling: admitted, not refused",
                json!({"phase": "Failed", "reason": "DeadlineExceeded", "containerStatuses": waiting}),
                None,
            ),
            ("running pod", json!({"phase": "Running"}), None),
            (
                "pending pod",
                json!({"phase": "Pending", "reason": "NodeAffinity"}),
                None,
            ),
            ("failed without reason", json!({"phase": "Failed"}), None),
        ];
        for (what, status, expected) in cases {
            let got = rejection(&pod(status), &classifier);
            assert_eq!(got.as_ref().map(|r| r.reason.as_str()), expected, "{what}");
        }
    }

    #[test]
    fn refusals_after_running_are_told_apart() {
        let classifier = Classifier::default();
        let ran = json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": "2026-01-01T00:00:00Z"}}}]);
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            (
                "re-admitted after a kubelet restart and refused",
                json!({"phase": "Failed", "reason": "OutOfcpu", "message": "Pod was rejected: Node didn't have enough resource: cpu", "containerStatuses": ran}),
                Some("OutOfcpu"),
            ),
            (
                "node affinity after running",
                json!({"phase": "Failed", "reason": "NodeAffinity", "containerStatuses": ran}),
                Some("NodeAffinity"),
            ),
            (
                "a pressure eviction of a running pod is not a refusal",
                json!({"phase": "Failed", "reason": "Evicted", "containerStatuses": ran}),
                None,
            ),
            (
                "an unknown reason after running is an ordinary failure",
                json!({"phase": "Failed", "reason": "Error", "containerStatuses": ran}),
                None,
            ),
            (
                "nothing ran: a plain rejection",
                json!({"phase": "Failed", "reason": "OutOfcpu"}),
                None,
            ),
            (
                "still running",
                json!({"phase": "Running", "containerStatuses": ran}),
                None,
            ),
        ];
        for (what, status, expected) in cases {
            let got = rejected_after_running(&pod(status), &classifier);
            assert_eq!(got.as_ref().map(|r| r.reason.as_str()), expected, "{what}");
        }
    }

    #[test]
    fn configured_classes_reach_the_record() {
        let classifier = Classifier::new(["SysctlForbidden"], ["NodePorts"]).expect("valid");
        let got = |reason| {
            rejection(&failed_with(reason, "m"), &classifier)
                .map(|r| r.class)
                .expect("rejection")
        };
        assert_eq!(got("SysctlForbidden"), Transient);
        assert_eq!(got("NodePorts"), Permanent);
        assert_eq!(got("AppArmor"), Permanent);
    }
}
