use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspaceStatus};

use super::*;

const AFTER: SignedDuration = SignedDuration::from_secs(60);

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn node(ready: Option<(&str, i64)>) -> Node {
    Node {
        status: Some(NodeStatus {
            conditions: ready.map(|(status, since)| {
                vec![NodeCondition {
                    type_: "Ready".into(),
                    status: status.into(),
                    message: Some("Kubelet stopped posting node status.".into()),
                    last_transition_time: Some(Time(at(since))),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn workspace(node_lost: Option<bool>) -> Workspace {
    let mut ws = Workspace::new("ws", Default::default());
    let mut status = WorkspaceStatus::default();
    if let Some(lost) = node_lost {
        set_condition(
            &mut status.conditions,
            condition::NODE_LOST,
            lost,
            "x",
            "x",
            None,
            at(0),
        );
    }
    ws.status = Some(status);
    ws
}

fn lost_condition(step: &NodeLossStep) -> Option<(String, String, String)> {
    let status = match step {
        NodeLossStep::Lost { status, .. } | NodeLossStep::Back { status, .. } => status,
        _ => return None,
    };
    status
        .conditions
        .iter()
        .find(|c| c.type_ == condition::NODE_LOST)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[test]
fn node_health_reads_the_ready_condition() {
    assert_eq!(node_health(None), NodeHealth::Gone);
    assert_eq!(
        node_health(Some(&node(Some(("True", 0))))),
        NodeHealth::Ready
    );
    assert_eq!(
        node_health(Some(&node(Some(("Unknown", 5))))),
        NodeHealth::NotReady {
            since: at(5),
            why: "Ready=Unknown: Kubelet stopped posting node status.".into()
        }
    );
    assert!(matches!(
        node_health(Some(&node(None))),
        NodeHealth::NotReady { .. }
    ));
}

/// The NodeLost condition a step writes: (status, reason).
type Written = Option<(&'static str, &'static str)>;
/// (already marked lost?, the node's health, now) -> the step's kind, what it writes.
type Case = (Option<bool>, Option<NodeHealth>, i64, &'static str, Written);

#[test]
fn the_condition_follows_the_node() {
    let unknown_since_0 = NodeHealth::NotReady {
        since: at(0),
        why: "Ready=Unknown".into(),
    };
    let cases: Vec<Case> = vec![
        // A Ready node, never lost: nothing.
        (None, Some(NodeHealth::Ready), 10, "nothing", None),
        // Not Ready for less than --node-lost-after: look again when it would count.
        (None, Some(unknown_since_0.clone()), 59, "recheck", None),
        // Exactly then and later: lost.
        (
            None,
            Some(unknown_since_0.clone()),
            60,
            "lost",
            Some(("True", REASON_NOT_READY)),
        ),
        (
            Some(false),
            Some(unknown_since_0.clone()),
            300,
            "lost",
            Some(("True", REASON_NOT_READY)),
        ),
        // Already marked: no second Event.
        (
            Some(true),
            Some(unknown_since_0.clone()),
            300,
            "nothing",
            None,
        ),
        // A removed Node is lost at once.
        (
            None,
            Some(NodeHealth::Gone),
            1,
            "lost",
            Some(("True", REASON_GONE)),
        ),
        // Back: the node is Ready again, or the pod is gone (evicted, deleted).
        (
            Some(true),
            Some(NodeHealth::Ready),
            400,
            "back",
            Some(("False", REASON_READY)),
        ),
        (
            Some(true),
            None,
            400,
            "back",
            Some(("False", REASON_POD_GONE)),
        ),
        // Recovered before: nothing more.
        (Some(false), Some(NodeHealth::Ready), 400, "nothing", None),
        (Some(false), None, 400, "nothing", None),
    ];
    for (marked, health, now, kind, expected) in cases {
        let ws = workspace(marked);
        let step = step(&ws, health.as_ref().map(|h| ("node-2", h)), at(now), AFTER);
        let got_kind = match &step {
            NodeLossStep::Nothing => "nothing",
            NodeLossStep::RecheckAt(_) => "recheck",
            NodeLossStep::Lost { .. } => "lost",
            NodeLossStep::Back { .. } => "back",
        };
        let case = format!("marked {marked:?}, node {health:?}, at {now}");
        assert_eq!(got_kind, kind, "{case}");
        assert_eq!(
            lost_condition(&step).map(|(s, r, _)| (s, r)),
            expected.map(|(s, r)| (s.to_string(), r.to_string())),
            "{case}"
        );
        if let NodeLossStep::RecheckAt(t) = step {
            assert_eq!(t, at(60), "{case}");
        }
    }
}

#[test]
fn the_lost_message_names_the_node_and_since_when() {
    let health = NodeHealth::NotReady {
        since: at(0),
        why: "Ready=Unknown: Kubelet stopped posting node status.".into(),
    };
    let step = step(&workspace(None), Some(("node-2", &health)), at(90), AFTER);
    let (_, _, message) = lost_condition(&step).expect("lost");
    assert!(
        message.contains("node node-2 has not been Ready since"),
        "{message}"
    );
    assert!(message.contains("Kubelet stopped posting"), "{message}");
    let NodeLossStep::Lost { note, .. } = step else {
        panic!("lost expected")
    };
    assert!(note.contains("re-created"), "{note}");
}
