use super::*;

fn pod(status: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status}))
        .expect("literal pod")
}

fn probe_pod(ttl_secs: i64) -> Pod {
    build(&PodParams {
        node: "node-a",
        node_uid: "uid-a",
        image: "busybox:1.36",
        pull_policy: "IfNotPresent",
        expires_unix: 1_700_000_120,
        ttl_secs,
    })
    .expect("valid pod")
}

#[test]
fn the_probe_pod_is_pinned_owned_by_its_node_and_expires() {
    let pod = probe_pod(120);
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.node_name.as_deref(), Some("node-a"));
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.active_deadline_seconds, Some(120));
    let owners = pod.metadata.owner_references.as_deref().unwrap_or(&[]);
    assert_eq!(owners.len(), 1, "{owners:?}");
    let owner = &owners[0];
    // kubectl drain evicts a pod with any controller but a DaemonSet without --force.
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str()),
        ("v1", "Node")
    );
    assert_eq!(
        (owner.name.as_str(), owner.uid.as_str()),
        ("node-a", "uid-a")
    );
    assert_eq!(owner.controller, Some(true));
    assert_ne!(
        owner.block_owner_deletion,
        Some(true),
        "would need update on nodes/finalizers"
    );
    assert_eq!(pod.metadata.namespace, None, "the Api's namespace decides");
    assert_eq!(expiry(&pod), 1_700_000_120);
    assert!(
        spec.volumes.as_ref().expect("volumes")[0]
            .empty_dir
            .is_some()
    );
    assert_eq!(
        probe_pod(0).spec.expect("spec").active_deadline_seconds,
        Some(1)
    );
}

/// What Pod Security `restricted` (latest) refuses in a pod, by rule, plus our own rule
/// that a probe pod carries no API token.
fn restricted_violations(pod: &Pod) -> Vec<&'static str> {
    let mut found = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return vec!["no spec"];
    };
    if spec.host_network == Some(true) || spec.host_pid == Some(true) || spec.host_ipc == Some(true)
    {
        found.push("host namespaces");
    }
    let allowed_volume = |v: &k8s_openapi::api::core::v1::Volume| {
        v.empty_dir.is_some()
            || v.config_map.is_some()
            || v.secret.is_some()
            || v.projected.is_some()
            || v.downward_api.is_some()
            || v.persistent_volume_claim.is_some()
            || v.ephemeral.is_some()
            || v.csi.is_some()
    };
    if spec.volumes.iter().flatten().any(|v| !allowed_volume(v)) {
        found.push("volume type");
    }
    if spec.automount_service_account_token != Some(false) {
        found.push("service account token mounted");
    }
    let pod_sc = spec.security_context.as_ref();
    for c in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        let sc = c.security_context.as_ref();
        if sc.and_then(|s| s.privileged) == Some(true) {
            found.push("privileged");
        }
        if sc.and_then(|s| s.allow_privilege_escalation) != Some(false) {
            found.push("allowPrivilegeEscalation");
        }
        let caps = sc.and_then(|s| s.capabilities.as_ref());
        if !caps
            .and_then(|c| c.drop.as_ref())
            .is_some_and(|d| d.iter().any(|x| x == "ALL"))
        {
            found.push("capabilities not dropped");
        }
        if caps
            .and_then(|c| c.add.as_ref())
            .is_some_and(|a| a.iter().any(|x| x != "NET_BIND_SERVICE"))
        {
            found.push("capabilities added");
        }
        let non_root = sc
            .and_then(|s| s.run_as_non_root)
            .or(pod_sc.and_then(|s| s.run_as_non_root));
        if non_root != Some(true) {
            found.push("runAsNonRoot");
        }
        let uid = sc
            .and_then(|s| s.run_as_user)
            .or(pod_sc.and_then(|s| s.run_as_user));
        if uid.is_none_or(|u| u == 0) {
            found.push("runAsUser not a fixed non-root uid");
        }
        let seccomp = sc
            .and_then(|s| s.seccomp_profile.as_ref())
            .or(pod_sc.and_then(|s| s.seccomp_profile.as_ref()));
        if !seccomp.is_some_and(|p| p.type_ == "RuntimeDefault" || p.type_ == "Localhost") {
            found.push("seccomp");
        }
        if c.ports.iter().flatten().any(|p| p.host_port.is_some()) {
            found.push("hostPort");
        }
    }
    found
}

#[test]
fn the_probe_pod_passes_pod_security_restricted() {
    assert_eq!(restricted_violations(&probe_pod(120)), Vec::<&str>::new());
    let spec = probe_pod(120).spec.expect("spec");
    let pod_sc = spec.security_context.expect("pod security context");
    assert_eq!(
        (pod_sc.run_as_user, pod_sc.run_as_group),
        (Some(PROBE_UID), Some(PROBE_UID))
    );
    let container_sc = spec.containers[0]
        .security_context
        .clone()
        .expect("container security context");
    assert_eq!(container_sc.read_only_root_filesystem, Some(true));

    // The check above catches what the namespace would refuse.
    let mut as_root = probe_pod(120);
    if let Some(sc) = as_root
        .spec
        .as_mut()
        .and_then(|s| s.security_context.as_mut())
    {
        sc.run_as_user = Some(0);
        sc.seccomp_profile = None;
    }
    assert_eq!(
        restricted_violations(&as_root),
        vec!["runAsUser not a fixed non-root uid", "seccomp"]
    );
    let mut with_host_path: Pod = serde_json::from_value(json!({
        "spec": {"automountServiceAccountToken": false, "containers": [],
            "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}
    }))
    .expect("literal pod");
    assert_eq!(restricted_violations(&with_host_path), vec!["volume type"]);
    if let Some(spec) = with_host_path.spec.as_mut() {
        spec.volumes = None;
        spec.automount_service_account_token = None;
    }
    assert_eq!(
        restricted_violations(&with_host_path),
        vec!["service account token mounted"]
    );
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

#[test]
fn autoscalers_may_evict_the_probe_pod() {
    let pod = probe_pod(120);
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get(SAFE_TO_EVICT).map(String::as_str),
        Some("true")
    );
    assert!(!annotations.contains_key(DO_NOT_DISRUPT));
    assert!(
        !pod.metadata
            .labels
            .unwrap_or_default()
            .contains_key(DO_NOT_DISRUPT)
    );
}

#[test]
fn a_probe_pod_deleted_by_someone_else_is_not_the_nodes_fault() {
    let deleted = |status: serde_json::Value| {
        let mut p = pod(status);
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        read(&p)
    };
    let gone = PodState::Finished(Outcome::Unknown(
        "the probe pod was deleted before it finished (evicted by a drain?)".into(),
    ));
    let cases = [
        (terminated("Failed", 137, Some("Error")), gone.clone()),
        (terminated("Running", 143, None), gone.clone()),
        (waiting("ContainerCreating", None), gone.clone()),
        (json!({"phase": "Pending"}), gone.clone()),
        (
            terminated("Succeeded", 0, Some("Completed")),
            PodState::Finished(Outcome::Success),
        ),
    ];
    for (status, want) in cases {
        assert_eq!(deleted(status.clone()), want, "{status}");
    }
}

#[test]
fn a_cordoned_node_gets_no_probe_pod() {
    let node = |unschedulable: Option<bool>, uid: Option<&str>| -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "node-a", "uid": uid},
            "spec": {"unschedulable": unschedulable},
        }))
        .expect("literal node")
    };
    let probe = Ok(Turn::Probe {
        node_uid: "uid-a".into(),
    });
    let cases = [
        (None, Some("uid-a"), probe.clone()),
        (Some(false), Some("uid-a"), probe),
        (Some(true), Some("uid-a"), Ok(Turn::Cordoned)),
        (Some(true), None, Ok(Turn::Cordoned)),
        (
            None,
            None,
            Err("the Node has no uid to own the probe pod".to_string()),
        ),
    ];
    for (unschedulable, uid, want) in cases {
        assert_eq!(
            turn(&node(unschedulable, uid)).map_err(|e| e.to_string()),
            want,
            "{unschedulable:?} {uid:?}"
        );
    }
}
