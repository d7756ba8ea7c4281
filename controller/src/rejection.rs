//! Is this pod one the kubelet rejected after scheduling? Decided from facts the kubelet
//! leaves in the pod status, never from message text (its wording differs by version).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// Kubelet admission failure reasons. An entry ending in `*` matches by prefix, for the
/// `OutOf<resource>` family (OutOfcpu, OutOfmemory, OutOfpods, OutOfnvidia.com/gpu, ...).
pub const DEFAULT_REASONS: &[&str] = &[
    "NodeAffinity",
    "NodeSelectorMismatching",
    "NodePorts",
    "NodeName",
    "Taint",
    "UnexpectedAdmissionError",
    "OutOf*",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectionReasons(Vec<String>);

impl RejectionReasons {
    pub fn new(reasons: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self(reasons.into_iter().map(Into::into).collect())
    }

    pub fn matches(&self, reason: &str) -> bool {
        self.0.iter().any(|r| match r.strip_suffix('*') {
            Some(prefix) => reason.starts_with(prefix) && reason.len() > prefix.len(),
            None => r == reason,
        })
    }
}

impl Default for RejectionReasons {
    fn default() -> Self {
        Self::new(DEFAULT_REASONS.iter().copied())
    }
}

/// What the kubelet said, for the Workspace status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
    pub node: String,
}

fn ever_started(status: &ContainerStatus) -> bool {
    let ran = |s: &k8s_openapi::api::core::v1::ContainerState| {
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

/// `Some` when the pod is Failed with a kubelet admission reason and no container of it
/// ever started.
pub fn rejection(pod: &Pod, reasons: &RejectionReasons) -> Option<Rejection> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Failed") {
        return None;
    }
    let reason = status.reason.as_deref().filter(|r| reasons.matches(r))?;
    let containers = status
        .container_statuses
        .iter()
        .chain(status.init_container_statuses.iter())
        .flatten();
    if containers.clone().any(ever_started) {
        return None;
    }
    Some(Rejection {
        reason: reason.to_string(),
        message: status.message.clone().unwrap_or_default(),
        node: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(status: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "ws-a"}, "spec": {"nodeName": "node-1", "containers": []}, "status": status}))
            .expect("pod literal")
    }

    #[test]
    fn rejections_are_told_from_facts() {
        let reasons = RejectionReasons::default();
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            (
                "node affinity, as 1.20 reports it",
                json!({"phase": "Failed", "reason": "NodeAffinity", "message": "Pod Predicate NodeAffinity failed"}),
                Some("NodeAffinity"),
            ),
            (
                "out of cpu",
                json!({"phase": "Failed", "reason": "OutOfcpu", "message": "Node didn't have enough resource: cpu"}),
                Some("OutOfcpu"),
            ),
            (
                "extended resource",
                json!({"phase": "Failed", "reason": "OutOfnvidia.com/gpu"}),
                Some("OutOfnvidia.com/gpu"),
            ),
            (
                "unexpected admission error",
                json!({"phase": "Failed", "reason": "UnexpectedAdmissionError"}),
                Some("UnexpectedAdmissionError"),
            ),
            (
                "message wording is irrelevant",
                json!({"phase": "Failed", "reason": "NodeAffinity", "message": "something else entirely"}),
                Some("NodeAffinity"),
            ),
            (
                "waiting containers never started",
                json!({"phase": "Failed", "reason": "OutOfmemory", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
                Some("OutOfmemory"),
            ),
            (
                "evicted after running",
                json!({"phase": "Failed", "reason": "Evicted"}),
                None,
            ),
            (
                "a container ran",
                json!({"phase": "Failed", "reason": "OutOfcpu", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "startedAt": "2026-01-01T00:00:00Z"}}}]}),
                None,
            ),
            (
                "a container restarted",
                json!({"phase": "Failed", "reason": "NodeAffinity", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 2}]}),
                None,
            ),
            ("running pod", json!({"phase": "Running"}), None),
            (
                "pending pod",
                json!({"phase": "Pending", "reason": "NodeAffinity"}),
                None,
            ),
            ("failed without reason", json!({"phase": "Failed"}), None),
            (
                "bare OutOf is not a resource",
                json!({"phase": "Failed", "reason": "OutOf"}),
                None,
            ),
        ];
        for (what, status, expected) in cases {
            let got = rejection(&pod(status), &reasons);
            assert_eq!(got.as_ref().map(|r| r.reason.as_str()), expected, "{what}");
            if let Some(r) = got {
                assert_eq!(r.node, "node-1", "{what}");
            }
        }
    }

    #[test]
    fn reason_set_is_configurable() {
        let only_affinity = RejectionReasons::new(["NodeAffinity"]);
        assert!(only_affinity.matches("NodeAffinity"));
        assert!(!only_affinity.matches("OutOfcpu"));
        assert!(RejectionReasons::default().matches("OutOfpods"));
    }
}
