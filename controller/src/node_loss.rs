//! "Has this workspace lost its node?" Pure: the Workspace, its pod's Node (as the
//! controller's node cache has it) and the time in, the status change out.
//!
//! A node whose kubelet stops reporting is marked `Ready=Unknown` by the node lifecycle
//! controller after its grace period (40 s by default), and its pods are evicted after
//! their `tolerationSeconds` (300 s by default). In between, the pod still says Running and
//! nothing tells the workspace's owner why it stopped answering. lifeguard says it: after
//! the node has not been Ready for `--node-lost-after`, the Workspace carries
//! `NodeLost=True` and a Warning Event. When the node is Ready again the condition turns
//! False (reason `NodeReady`) and a Normal Event says so: the pod either carried on
//! (the node came back before the eviction) or was deleted, and the workspace is then
//! re-created like any deleted pod. The disposal finalizer is released at the disposal
//! timeout even when the node never answers (`plan`), so a lost node never keeps a pod.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Node;
use lifeguard_api::Workspace;
use lifeguard_api::workspace::condition;

use crate::status::{condition_is_true, set_condition};

pub const REASON_NOT_READY: &str = "NodeNotReady";
pub const REASON_GONE: &str = "NodeGone";
pub const REASON_READY: &str = "NodeReady";
pub const REASON_POD_GONE: &str = "PodGone";

/// What the node cache says about the node a workspace's pod is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeHealth {
    Ready,
    /// Ready is False or Unknown (or missing) since `since`.
    NotReady {
        since: Timestamp,
        why: String,
    },
    /// The Node object does not exist (any more).
    Gone,
}

pub fn node_health(node: Option<&Node>) -> NodeHealth {
    let Some(node) = node else {
        return NodeHealth::Gone;
    };
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    match ready {
        Some(c) if c.status == "True" => NodeHealth::Ready,
        Some(c) => NodeHealth::NotReady {
            since: c
                .last_transition_time
                .as_ref()
                .map_or(Timestamp::UNIX_EPOCH, |t| t.0),
            why: format!(
                "Ready={}{}",
                c.status,
                c.message
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
        },
        None => NodeHealth::NotReady {
            since: node
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(Timestamp::UNIX_EPOCH, |t| t.0),
            why: "no Ready condition".into(),
        },
    }
}

/// What to do about the NodeLost condition now.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeLossStep {
    /// The condition is as it should be.
    Nothing,
    /// Not lost yet: look again then.
    RecheckAt(Timestamp),
    /// Write this status and publish a Warning (lost) or Normal (back) Event with `note`.
    Lost {
        status: Box<lifeguard_api::WorkspaceStatus>,
        note: String,
    },
    Back {
        status: Box<lifeguard_api::WorkspaceStatus>,
        note: String,
    },
}

/// `node`: the node the workspace's pod is bound to, and its health; None when there is
/// no pod or it is not bound yet.
pub fn step(
    ws: &Workspace,
    node: Option<(&str, &NodeHealth)>,
    now: Timestamp,
    lost_after: SignedDuration,
) -> NodeLossStep {
    let status = ws.status.clone().unwrap_or_default();
    let marked = condition_is_true(&status, condition::NODE_LOST);
    let generation = ws.metadata.generation;
    let lost = match node {
        Some((name, NodeHealth::Gone)) => Some((
            REASON_GONE,
            format!("node {name} was removed from the cluster"),
        )),
        Some((name, NodeHealth::NotReady { since, why })) => {
            let at = *since + lost_after;
            if now < at {
                return if marked {
                    NodeLossStep::Nothing
                } else {
                    NodeLossStep::RecheckAt(at)
                };
            }
            Some((
                REASON_NOT_READY,
                format!("node {name} has not been Ready since {since} ({why})"),
            ))
        }
        Some((_, NodeHealth::Ready)) | None => None,
    };
    match (lost, marked) {
        (Some((reason, message)), false) => {
            let mut status = status;
            set_condition(
                &mut status.conditions,
                condition::NODE_LOST,
                true,
                reason,
                &message,
                generation,
                now,
            );
            NodeLossStep::Lost {
                status: Box::new(status),
                note: format!(
                    "{message}; the pod is evicted by Kubernetes (or comes back with the node), \
                     and the workspace is re-created once its pod is gone"
                ),
            }
        }
        (None, true) => {
            let (reason, message) = match node {
                Some((name, _)) => (REASON_READY, format!("node {name} is Ready again")),
                None => (
                    REASON_POD_GONE,
                    "the workspace's pod on the lost node is gone".to_string(),
                ),
            };
            let mut status = status;
            set_condition(
                &mut status.conditions,
                condition::NODE_LOST,
                false,
                reason,
                &message,
                generation,
                now,
            );
            NodeLossStep::Back {
                status: Box::new(status),
                note: message,
            }
        }
        _ => NodeLossStep::Nothing,
    }
}

#[cfg(test)]
#[path = "node_loss_tests.rs"]
mod node_loss_tests;
