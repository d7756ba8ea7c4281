//! The throwaway pod of the container check, and how to read its state. Pure.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::json;

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
    pub image: &'a str,
    pub pull_policy: &'a str,
    pub owner: Option<&'a OwnerReference>,
    pub expires_unix: i64,
    pub ttl_secs: i64,
}

pub fn selector() -> String {
    format!("{PROBE_LABEL}=container")
}

pub fn build(p: &PodParams) -> Result<Pod, serde_json::Error> {
    let owners: Vec<&OwnerReference> = p.owner.into_iter().collect();
    serde_json::from_value(json!({
        "metadata": {
            "generateName": NAME_PREFIX,
            "labels": {PROBE_LABEL: "container", EXPIRES_LABEL: p.expires_unix.to_string()},
            // Deleted with the prober's own pod by the garbage collector; the expiry label
            // covers a prober that restarts in place.
            "ownerReferences": owners,
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
            "securityContext": {"runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65534},
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

/// Where a throwaway pod is: finished (with the check's outcome) or still on its way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    Finished(Outcome),
    Waiting(String),
}

pub fn read(pod: &Pod) -> PodState {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
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
            let message = status.and_then(|s| s.message.as_deref());
            let detail = match (terminated, reason) {
                (Some(t), _) => format!(
                    "container exited {}{}",
                    t.exit_code,
                    t.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                ),
                (None, Some(r)) => format!("{r}: {}", message.unwrap_or("")),
                (None, None) => "no container ran".into(),
            };
            return PodState::Finished(Outcome::Failure(format!("probe pod failed: {detail}")));
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
    let why = match waiting {
        Some(w) => format!(
            "{phase}, container waiting: {}{}",
            w.reason.as_deref().unwrap_or("unknown reason"),
            w.message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ),
        None if container.is_none() => format!("{phase}, container not created"),
        None => phase.to_string(),
    };
    PodState::Waiting(why)
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

#[cfg(test)]
mod tests {
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

    #[test]
    fn pod_states_read_as_outcomes() {
        let cases = [
            (
                json!({"phase": "Succeeded"}),
                PodState::Finished(Outcome::Success),
            ),
            (
                json!({"phase": "Failed", "containerStatuses": [{"name": "probe", "image": "i", "imageID": "",
                    "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
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
                json!({"phase": "Running", "containerStatuses": [{"name": "probe", "image": "i", "imageID": "",
                    "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 2}}}]}),
                PodState::Finished(Outcome::Failure(
                    "probe pod failed: container exited 2".into(),
                )),
            ),
            (
                json!({}),
                PodState::Waiting("Pending, container not created".into()),
            ),
            (
                json!({"phase": "Pending", "containerStatuses": [{"name": "probe", "image": "i", "imageID": "",
                    "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
                PodState::Waiting("Pending, container waiting: ContainerCreating".into()),
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
}
