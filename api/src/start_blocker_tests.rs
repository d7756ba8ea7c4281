use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::*;

fn pod(status: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "ws-alice"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "ide", "image": "x"}]},
        "status": status,
    }))
    .expect("pod literal")
}

fn waiting(name: &str, reason: &str, message: &str) -> Value {
    json!({"name": name, "image": "registry.example/ide:1", "imageID": "", "ready": false,
           "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}})
}

fn unschedulable() -> Value {
    json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
           "reason": "Unschedulable", "message": "0/2 nodes are available: 2 Insufficient cpu."}]})
}

/// What `blocker` should find: kind, reason, class and a fragment of the message.
type Want = Option<(BlockerKind, &'static str, BlockerClass, &'static str)>;
/// (case, pod status, mount Event, expected)
type Case = (
    &'static str,
    Value,
    Option<(&'static str, &'static str)>,
    Want,
);

#[test]
fn blockers_from_the_pod() {
    let crash = json!({"name": "ide", "image": "busybox", "imageID": "", "ready": false, "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}},
        "lastState": {"terminated": {"exitCode": 3, "reason": "Error"}}});
    // (case, pod status, mount event, expected (kind, reason, class, message fragment))
    let cases: Vec<Case> = vec![
        ("just created", json!({"phase": "Pending"}), None, None),
        (
            "creating, no event",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "ContainerCreating", "")]}),
            None,
            None,
        ),
        (
            "unschedulable",
            unschedulable(),
            None,
            Some((
                BlockerKind::Unschedulable,
                "Unschedulable",
                BlockerClass::Wait,
                "2 Insufficient cpu",
            )),
        ),
        (
            "image pull",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "ErrImagePull", "rpc error: not found")]}),
            None,
            Some((
                BlockerKind::ImagePull,
                "ErrImagePull",
                BlockerClass::Wait,
                "container ide: image \"registry.example/ide:1\": rpc error: not found",
            )),
        ),
        (
            "pull backoff",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "ImagePullBackOff", "Back-off pulling image")]}),
            None,
            Some((
                BlockerKind::ImagePull,
                "ImagePullBackOff",
                BlockerClass::Wait,
                "Back-off pulling",
            )),
        ),
        (
            "never pull",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "ErrImageNeverPull", "Container image \"x\" is not present with pull policy of Never")]}),
            None,
            Some((
                BlockerKind::ImagePull,
                "ErrImageNeverPull",
                BlockerClass::Permanent,
                "pull policy of Never",
            )),
        ),
        (
            "invalid name",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "InvalidImageName", "couldn't parse image reference")]}),
            None,
            Some((
                BlockerKind::ImagePull,
                "InvalidImageName",
                BlockerClass::Permanent,
                "couldn't parse",
            )),
        ),
        (
            "missing secret",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "CreateContainerConfigError", "secret \"token\" not found")]}),
            None,
            Some((
                BlockerKind::ContainerConfig,
                "CreateContainerConfigError",
                BlockerClass::Wait,
                "secret \"token\" not found",
            )),
        ),
        (
            "runtime refuses",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "CreateContainerError", "context deadline exceeded")]}),
            None,
            Some((
                BlockerKind::ContainerCreate,
                "CreateContainerError",
                BlockerClass::Recreate,
                "context deadline",
            )),
        ),
        (
            "crash loop",
            json!({"phase": "Running", "containerStatuses": [crash]}),
            None,
            Some((
                BlockerKind::CrashLoop,
                "CrashLoopBackOff",
                BlockerClass::Wait,
                "container ide exited with exit code 3 (Error), restarted 4 times",
            )),
        ),
        (
            "unknown waiting reason",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "ImageInspectError", "bad")]}),
            None,
            Some((
                BlockerKind::ContainerWaiting,
                "ImageInspectError",
                BlockerClass::Wait,
                "ImageInspectError: bad",
            )),
        ),
        (
            "init container first",
            json!({"phase": "Pending",
            "initContainerStatuses": [waiting("setup", "CreateContainerConfigError", "configmap \"c\" not found")],
            "containerStatuses": [waiting("ide", "PodInitializing", "")]}),
            None,
            Some((
                BlockerKind::ContainerConfig,
                "CreateContainerConfigError",
                BlockerClass::Wait,
                "container setup",
            )),
        ),
        (
            "permanent wins over wait",
            json!({"phase": "Pending", "containerStatuses": [
            waiting("sidecar", "ImagePullBackOff", "back-off"), waiting("ide", "InvalidImageName", "bad ref")]}),
            None,
            Some((
                BlockerKind::ImagePull,
                "InvalidImageName",
                BlockerClass::Permanent,
                "container ide",
            )),
        ),
        (
            "mount fails on the node",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "ContainerCreating", "")]}),
            Some((
                "FailedMount",
                "MountVolume.SetUp failed for volume \"data\" : mount failed: exit status 32",
            )),
            Some((
                BlockerKind::VolumeMount,
                "FailedMount",
                BlockerClass::Recreate,
                "exit status 32",
            )),
        ),
        (
            "mount waits for a secret",
            json!({"phase": "Pending", "containerStatuses": [waiting("ide", "ContainerCreating", "")]}),
            Some((
                "FailedMount",
                "MountVolume.SetUp failed for volume \"creds\" : secret \"creds\" not found",
            )),
            Some((
                BlockerKind::VolumeMount,
                "FailedMount",
                BlockerClass::Wait,
                "secret \"creds\" not found",
            )),
        ),
        (
            "attach fails",
            json!({"phase": "Pending"}),
            Some((
                "FailedAttachVolume",
                "AttachVolume.Attach failed for volume \"pv\"",
            )),
            Some((
                BlockerKind::VolumeMount,
                "FailedAttachVolume",
                BlockerClass::Recreate,
                "Attach failed",
            )),
        ),
        (
            "old mount event of a started pod",
            json!({"phase": "Running", "containerStatuses": [
            {"name": "ide", "image": "x", "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]}),
            Some(("FailedMount", "timed out")),
            None,
        ),
    ];
    for (case, status, event, want) in cases {
        let got = blocker(&pod(status), event);
        match (got, want) {
            (None, None) => {}
            (Some(b), Some((kind, reason, class, fragment))) => {
                assert_eq!(
                    (b.kind, b.reason.as_str(), b.class),
                    (kind, reason, class),
                    "{case}"
                );
                assert!(
                    b.message.contains(fragment),
                    "{case}: {:?} lacks {fragment:?}",
                    b.message
                );
            }
            (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn an_unscheduled_pod_is_not_creating_containers() {
    let mut p = pod(unschedulable());
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = None;
    }
    assert!(!creating_containers(&p));
    assert!(creating_containers(&pod(json!({"phase": "Pending"}))));
}

#[test]
fn catalogue_names_each_reason_once_and_every_kind_has_a_reason() {
    let mut seen = std::collections::BTreeSet::new();
    for k in CATALOGUE {
        assert!(seen.insert(k.reason), "{} listed twice", k.reason);
        assert!(!k.why.is_empty() && !k.signal.is_empty(), "{}", k.reason);
    }
    for reason in MOUNT_EVENT_REASONS {
        assert!(seen.contains(reason), "{reason} is read but not catalogued");
    }
}
