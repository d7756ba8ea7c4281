use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use lifeguard_api::Workspace;
use lifeguard_api::eviction::EvictionRecord;
use lifeguard_api::names::EVICTION_ANNOTATION;
use serde_json::json;

use super::*;

const MAX_WAIT: SignedDuration = SignedDuration::from_mins(10);

fn at(text: &str) -> Timestamp {
    text.parse().expect("timestamp")
}

fn workspace(record: Option<&EvictionRecord>) -> Workspace {
    let annotations = match record {
        Some(r) => json!({ EVICTION_ANNOTATION: r.to_annotation() }),
        None => json!({}),
    };
    serde_json::from_value(json!({
        "apiVersion": "lifeguard.dev/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": "alice", "namespace": "team", "uid": "ws-uid", "annotations": annotations},
        "spec": {"podTemplate": {"spec": {"containers": []}}}
    }))
    .expect("workspace")
}

struct PodShape {
    label: bool,
    owner: &'static str,
    finalizer: bool,
    released: bool,
    node: Option<&'static str>,
    uid: &'static str,
}

const RUNNING: PodShape = PodShape {
    label: true,
    owner: "ws-uid",
    finalizer: true,
    released: false,
    node: Some("node-2"),
    uid: "pod-1",
};

fn pod(shape: &PodShape) -> Pod {
    let mut labels = json!({});
    if shape.label {
        labels = json!({"lifeguard.dev/workspace": "alice"});
    }
    let finalizers: Vec<&str> = if shape.finalizer {
        vec!["lifeguard.dev/disposal"]
    } else {
        vec![]
    };
    let mut annotations = json!({});
    if shape.released {
        annotations = json!({"lifeguard.dev/released": "2026-12-07T10:00:00Z"});
    }
    serde_json::from_value(json!({
        "metadata": {
            "name": "ws-alice", "namespace": "team", "uid": shape.uid,
            "labels": labels, "annotations": annotations, "finalizers": finalizers,
            "ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                "name": "alice", "uid": shape.owner, "controller": true}]
        },
        "spec": {"containers": [], "nodeName": shape.node}
    }))
    .expect("pod")
}

fn record(uid: &str, time: &str) -> EvictionRecord {
    EvictionRecord {
        by: "kubernetes-admin".into(),
        node: "node-2".into(),
        pod_uid: uid.into(),
        time: Time(at(time)),
    }
}

#[derive(Debug, PartialEq)]
enum Want {
    Allow(&'static str),
    /// 429, writing a new record of this time.
    HoldAndRecord(&'static str),
    /// 429, the first eviction of this pod is recorded already.
    Hold,
}

/// (case, the pod, whether its Workspace exists, the eviction recorded on it, the answer)
type Case<'a> = (
    &'a str,
    Option<PodShape>,
    bool,
    Option<&'a EvictionRecord>,
    Want,
);

#[test]
fn an_eviction_of_a_held_workspace_pod_waits_until_it_is_saved_or_max_wait_is_over() {
    let now = "2026-12-07T10:05:00Z";
    let earlier = record("pod-1", "2026-12-07T10:00:00Z");
    let long_ago = record("pod-1", "2026-12-07T09:55:00Z");
    let other_pod = record("pod-0", "2026-12-07T10:00:00Z");
    let cases: Vec<Case> = vec![
        ("no such pod", None, true, None, Want::Allow("no such pod")),
        (
            "a pod without the workspace label",
            Some(PodShape {
                label: false,
                ..RUNNING
            }),
            true,
            None,
            Want::Allow("not a workspace pod"),
        ),
        (
            "its Workspace is gone",
            Some(RUNNING),
            false,
            None,
            Want::Allow("its Workspace is gone"),
        ),
        (
            "a pod another Workspace of that name left",
            Some(PodShape {
                owner: "old-uid",
                ..RUNNING
            }),
            true,
            None,
            Want::Allow("its Workspace does not control it"),
        ),
        (
            "released: the finalizer is gone",
            Some(PodShape {
                finalizer: false,
                ..RUNNING
            }),
            true,
            Some(&earlier),
            Want::Allow("lifeguard has released it"),
        ),
        (
            "released: marked so in the same write",
            Some(PodShape {
                released: true,
                ..RUNNING
            }),
            true,
            Some(&earlier),
            Want::Allow("lifeguard has released it"),
        ),
        (
            "not scheduled",
            Some(PodShape {
                node: None,
                ..RUNNING
            }),
            true,
            None,
            Want::Allow("it is on no node, so there is nothing to save"),
        ),
        (
            "the first eviction",
            Some(RUNNING),
            true,
            None,
            Want::HoldAndRecord(now),
        ),
        ("a retry", Some(RUNNING), true, Some(&earlier), Want::Hold),
        (
            "a record of an earlier pod of the same name",
            Some(RUNNING),
            true,
            Some(&other_pod),
            Want::HoldAndRecord(now),
        ),
        (
            "maxWait after the first eviction",
            Some(RUNNING),
            true,
            Some(&long_ago),
            Want::Allow("its maximum wait is over"),
        ),
    ];
    for (case, shape, ws_exists, recorded, want) in cases {
        let pod = shape.as_ref().map(pod);
        let ws = ws_exists.then(|| workspace(recorded));
        let got = decide(
            pod.as_ref(),
            ws.as_ref(),
            true,
            "kubernetes-admin",
            at(now),
            MAX_WAIT,
        );
        let got = match got {
            Verdict::Allow(why) => Want::Allow(why),
            Verdict::Gone(message) => panic!("{case}: gone: {message}"),
            Verdict::Hold { record: None, .. } => Want::Hold,
            Verdict::Hold {
                record: Some(r), ..
            } => {
                assert_eq!(
                    (r.by.as_str(), r.node.as_str(), r.pod_uid.as_str()),
                    ("kubernetes-admin", "node-2", "pod-1"),
                    "{case}"
                );
                Want::HoldAndRecord(if r.time.0 == at(now) {
                    now
                } else {
                    "another time"
                })
            }
        };
        assert_eq!(got, want, "{case}");
    }
}

#[test]
fn the_answer_says_what_lifeguard_does_who_asked_and_until_when() {
    let earlier = record("pod-1", "2026-12-07T10:00:00Z");
    let ws = workspace(Some(&earlier));
    let notice = json!({"by": "kubernetes-admin", "node": "node-2",
        "evictedAt": "2026-12-07T10:00:00Z", "stopAt": "2026-12-07T10:00:30Z", "message": "m"})
    .to_string();
    let told = |mut p: Pod| {
        p.metadata
            .annotations
            .get_or_insert_default()
            .insert("lifeguard.dev/eviction-notice".into(), notice.clone());
        p
    };
    let deleting = |mut p: Pod| {
        p.metadata.deletion_timestamp = serde_json::from_value(json!("2026-12-07T10:00:40Z")).ok();
        p
    };
    let cases = [
        (
            "not stopped yet: waiting for the budget, or for the controller",
            pod(&RUNNING),
            "lifeguard will save workspace team/alice before it leaves node node-2, as soon as \
             its eviction budget has room",
        ),
        (
            "told, waiting out its notice",
            told(pod(&RUNNING)),
            "lifeguard told workspace team/alice it stops at 2026-12-07T10:00:30Z and saves it \
             before it leaves node node-2",
        ),
        (
            "deleted, being saved",
            deleting(told(pod(&RUNNING))),
            "lifeguard is saving workspace team/alice before it leaves node node-2",
        ),
    ];
    for (case, p, doing) in cases {
        let verdict = decide(
            Some(&p),
            Some(&ws),
            true,
            "system:serviceaccount:kube-system:cluster-autoscaler",
            at("2026-12-07T10:01:00Z"),
            MAX_WAIT,
        );
        let Verdict::Hold { message, .. } = verdict else {
            panic!("{case}: held: {verdict:?}");
        };
        assert_eq!(
            message,
            format!(
                "{doing}; retry (first asked by kubernetes-admin at 2026-12-07T10:00:00Z; \
                 evicted as asked from 2026-12-07T10:10:00Z at the latest)"
            ),
            "{case}"
        );
    }
}

#[test]
fn a_held_eviction_is_answered_as_a_disruption_budget_would() {
    let Decision::Deny {
        code,
        reason,
        message,
    } = too_many_requests("retry".into())
    else {
        panic!("denied");
    };
    assert_eq!(
        (code, reason, message.as_str()),
        (429, "TooManyRequests", "retry")
    );
}

#[test]
fn a_drains_late_retry_by_name_does_not_evict_the_workspace_it_brought_back() {
    let now = "2026-12-07T10:05:00Z";
    let on_node_1 = PodShape {
        uid: "pod-2",
        node: Some("node-1"),
        ..RUNNING
    };
    let on_node_2 = PodShape {
        uid: "pod-2",
        ..RUNNING
    };
    let evicted_from_2 = record("pod-1", "2026-12-07T10:00:00Z");
    let long_ago = record("pod-1", "2026-12-07T09:50:00Z");
    // (case, the pod now, its node being drained, the record, answered 404)
    let cases = [
        (
            "the replacement on a node nobody drains",
            &on_node_1,
            false,
            &evicted_from_2,
            true,
        ),
        (
            "node 1 is drained now: a new eviction",
            &on_node_1,
            true,
            &evicted_from_2,
            false,
        ),
        (
            "the first eviction was long ago",
            &on_node_1,
            false,
            &long_ago,
            false,
        ),
        (
            "the same node: a new eviction",
            &on_node_2,
            false,
            &evicted_from_2,
            false,
        ),
    ];
    for (case, shape, drained, earlier, gone) in cases {
        let ws = workspace(Some(earlier));
        let verdict = decide(
            Some(&pod(shape)),
            Some(&ws),
            drained,
            "kubernetes-admin",
            at(now),
            MAX_WAIT,
        );
        match verdict {
            Verdict::Gone(message) => {
                assert!(gone, "{case}: {message}");
                assert_eq!(
                    message,
                    "the pod ws-alice evicted from node node-2 is gone: lifeguard saved workspace \
                     team/alice and started it again on node node-1"
                );
            }
            other => assert!(!gone, "{case}: {other:?}"),
        }
    }
}

#[test]
fn a_node_is_being_drained_when_cordoned_or_tainted_by_an_autoscaler() {
    let node = |spec: serde_json::Value| -> k8s_openapi::api::core::v1::Node {
        serde_json::from_value(json!({"metadata": {"name": "n"}, "spec": spec})).expect("node")
    };
    let cases = [
        ("schedulable", json!({}), false),
        ("cordoned", json!({"unschedulable": true}), true),
        (
            "cluster-autoscaler",
            json!({"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}),
            true,
        ),
        (
            "Karpenter",
            json!({"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}),
            true,
        ),
        (
            "lifeguard's own taint",
            json!({"taints": [{"key": "lifeguard.dev/unhealthy", "effect": "NoSchedule"}]}),
            false,
        ),
    ];
    for (case, spec, want) in cases {
        assert_eq!(being_drained(&node(spec)), want, "{case}");
    }
}
