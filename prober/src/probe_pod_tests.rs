use super::*;

fn pod(status: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status}))
        .expect("literal pod")
}

#[test]
fn the_probe_pod_is_pinned_owned_and_expires() {
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: "lifeguard-prober-abcde".into(),
        uid: "1234".into(),
        ..Default::default()
    };
    let pod = build(&PodParams {
        node: "node-a",
        image: "busybox:1.36",
        pull_policy: "IfNotPresent",
        owner: Some(&owner),
        expires_unix: 1_700_000_120,
        ttl_secs: 120,
    })
    .expect("valid pod");
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.node_name.as_deref(), Some("node-a"));
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.active_deadline_seconds, Some(120));
    assert_eq!(pod.metadata.owner_references.as_deref(), Some(&[owner][..]));
    assert_eq!(expiry(&pod), 1_700_000_120);
    assert!(
        spec.volumes.as_ref().expect("volumes")[0]
            .empty_dir
            .is_some()
    );
    let unowned = build(&PodParams {
        node: "node-a",
        image: "busybox:1.36",
        pull_policy: "IfNotPresent",
        owner: None,
        expires_unix: 1,
        ttl_secs: 0,
    })
    .expect("valid pod");
    assert_eq!(unowned.metadata.owner_references.as_deref(), Some(&[][..]));
    assert_eq!(unowned.spec.expect("spec").active_deadline_seconds, Some(1));
}

fn waiting(reason: &str, message: Option<&str>) -> serde_json::Value {
    let mut w = json!({"reason": reason});
    if let Some(m) = message {
        w["message"] = json!(m);
    }
    json!({"phase": "Pending", "containerStatuses": [{"name": "probe", "image": "i", "imageID": "",
        "ready": false, "restartCount": 0, "state": {"waiting": w}}]})
}

fn terminated(phase: &str, exit: i32, reason: Option<&str>) -> serde_json::Value {
    json!({"phase": phase, "containerStatuses": [{"name": "probe", "image": "i", "imageID": "",
        "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": exit, "reason": reason}}}]})
}

/// What the node is blamed for, as a user reads it off the verdict.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    Passed,
    /// Counts towards unhealthy.
    NodeFault,
    /// Inconclusive: never makes the node unhealthy.
    NotTheNode,
    /// Still going; at the deadline it becomes one of the two above.
    WaitingBlaming(Blame),
}

fn classify(state: &PodState) -> Read {
    match state {
        PodState::Finished(Outcome::Success) => Read::Passed,
        PodState::Finished(Outcome::Failure(_)) => Read::NodeFault,
        PodState::Finished(Outcome::Unknown(_)) => Read::NotTheNode,
        PodState::Waiting { blame, .. } => Read::WaitingBlaming(*blame),
    }
}

#[test]
fn is_this_probe_failure_the_nodes_fault() {
    use Blame::{Node, NotNode};
    use Read::*;
    let cases: Vec<(&str, serde_json::Value, Read)> = vec![
        ("succeeded", json!({"phase": "Succeeded"}), Passed),
        // The node's faults.
        (
            "the container failed",
            terminated("Failed", 1, Some("Error")),
            NodeFault,
        ),
        (
            "the runtime could not start it",
            terminated("Failed", 128, Some("StartError")),
            NodeFault,
        ),
        (
            "exited non-zero while the pod still runs",
            terminated("Running", 2, None),
            NodeFault,
        ),
        (
            "admitted, then past activeDeadlineSeconds",
            json!({"phase": "Failed", "reason": "DeadlineExceeded", "message": "too long"}),
            NodeFault,
        ),
        (
            "failed with no reason and no container",
            json!({"phase": "Failed"}),
            NodeFault,
        ),
        (
            "evicted after it ran",
            json!({"phase": "Failed", "reason": "Evicted",
            "containerStatuses": [{"name": "probe", "image": "i", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"running": {}}}]}),
            NodeFault,
        ),
        ("no sandbox yet", json!({}), WaitingBlaming(Node)),
        (
            "container creating",
            waiting("ContainerCreating", None),
            WaitingBlaming(Node),
        ),
        (
            "runtime create error",
            waiting("CreateContainerError", Some("runc: exit 1")),
            WaitingBlaming(Node),
        ),
        (
            "runtime run error",
            waiting("RunContainerError", None),
            WaitingBlaming(Node),
        ),
        (
            "runtime cannot read its image store",
            waiting("ImageInspectError", None),
            WaitingBlaming(Node),
        ),
        (
            "a reason this kubelet does not know",
            waiting("SomethingNew", None),
            WaitingBlaming(Node),
        ),
        // Not the node's: the image.
        (
            "image pull error",
            waiting("ErrImagePull", Some("not found")),
            WaitingBlaming(NotNode),
        ),
        (
            "image pull back-off",
            waiting("ImagePullBackOff", None),
            WaitingBlaming(NotNode),
        ),
        (
            "image absent with pull policy Never",
            waiting("ErrImageNeverPull", None),
            WaitingBlaming(NotNode),
        ),
        (
            "invalid image name",
            waiting("InvalidImageName", None),
            WaitingBlaming(NotNode),
        ),
        (
            "registry unavailable",
            waiting("RegistryUnavailable", None),
            WaitingBlaming(NotNode),
        ),
        (
            "image signature refused",
            waiting("SignatureValidationFailed", None),
            WaitingBlaming(NotNode),
        ),
        (
            "spec cannot become a container",
            waiting("CreateContainerConfigError", None),
            WaitingBlaming(NotNode),
        ),
        // Not the node's: the kubelet's admission refused the pod before it ran.
        (
            "out of cpu",
            json!({"phase": "Failed", "reason": "OutOfcpu", "message": "Node didn't have enough resource: cpu"}),
            NotTheNode,
        ),
        (
            "out of pods",
            json!({"phase": "Failed", "reason": "OutOfpods"}),
            NotTheNode,
        ),
        (
            "node affinity",
            json!({"phase": "Failed", "reason": "NodeAffinity"}),
            NotTheNode,
        ),
        (
            "evicted at admission under pressure",
            json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: ephemeral-storage."}),
            NotTheNode,
        ),
        (
            "node shutting down",
            json!({"phase": "Failed", "reason": "NodeShutdown"}),
            NotTheNode,
        ),
        (
            "unexpected admission error",
            json!({"phase": "Failed", "reason": "UnexpectedAdmissionError"}),
            NotTheNode,
        ),
        (
            "refused while its container waited",
            json!({"phase": "Failed", "reason": "OutOfmemory",
            "containerStatuses": [{"name": "probe", "image": "i", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
            NotTheNode,
        ),
        (
            "a refusal reason after a restart is no refusal",
            json!({"phase": "Failed", "reason": "OutOfcpu",
            "containerStatuses": [{"name": "probe", "image": "i", "imageID": "", "ready": false,
            "restartCount": 1, "state": {"waiting": {}}}]}),
            NodeFault,
        ),
    ];
    for (name, status, want) in cases {
        assert_eq!(classify(&read(&pod(status))), want, "{name}");
    }
}

#[test]
fn pod_states_read_as_sentences_that_name_no_pod() {
    let cases = [
        (
            terminated("Failed", 1, Some("Error")),
            PodState::Finished(Outcome::Failure(
                "probe pod failed: container exited 1 (Error)".into(),
            )),
        ),
        (
            json!({"phase": "Failed", "reason": "DeadlineExceeded", "message": "too long"}),
            PodState::Finished(Outcome::Failure(
                "probe pod failed: DeadlineExceeded: too long".into(),
            )),
        ),
        (
            json!({"phase": "Failed", "reason": "OutOfcpu", "message": "Node didn't have enough resource: cpu"}),
            PodState::Finished(Outcome::Unknown(
                "the kubelet refused the probe pod: OutOfcpu: Node didn't have enough resource: cpu"
                    .into(),
            )),
        ),
        (
            json!({}),
            PodState::Waiting {
                why: "Pending, container not created".into(),
                blame: Blame::Node,
            },
        ),
        (
            waiting("ErrImagePull", Some("pull access denied")),
            PodState::Waiting {
                why: "Pending, container waiting: ErrImagePull: pull access denied".into(),
                blame: Blame::NotNode,
            },
        ),
    ];
    for (status, want) in cases {
        assert_eq!(read(&pod(status.clone())), want, "{status}");
    }
}

#[test]
fn pods_without_a_readable_expiry_count_as_expired() {
    let mut p = pod(json!({}));
    assert_eq!(expiry(&p), i64::MIN);
    p.metadata.labels = Some([(EXPIRES_LABEL.to_string(), "soon".to_string())].into());
    assert_eq!(expiry(&p), i64::MIN);
}
