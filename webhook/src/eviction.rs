//! Evictions of workspace pods (`pods/eviction` CREATE: `kubectl drain`, node upgrades,
//! autoscalers). The first eviction of a workspace pod lifeguard still holds is recorded
//! on its Workspace (`names::EVICTION_ANNOTATION`), which makes the controller stop the
//! pod gracefully (disposal handshake included) and start the workspace again elsewhere;
//! the eviction itself, and every retry until the pod is gone, is answered 429, as a
//! PodDisruptionBudget would, so the drain tool retries. `max_wait` after the first
//! eviction the pod is evicted normally, so no drain waits forever.
//!
//! [`decide`] is the pure decision; [`Evictions::admit`] reads the pod and its Workspace,
//! asks it, and writes the record.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_api::eviction::{EvictionNotice, EvictionRecord, recorded_for};
use lifeguard_api::names::{
    EVICTION_ANNOTATION, POD_FINALIZER, RELEASED_ANNOTATION, WORKSPACE_LABEL,
};
use serde_json::json;

use crate::review::{AdmissionRequest, Decision};

/// How long a read or write of the pod or Workspace may take: well inside the webhook
/// configuration's `timeoutSeconds`, so the API server gets lifeguard's answer.
pub const API_TIMEOUT: Duration = Duration::from_secs(2);

/// What an eviction gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Evicted normally; the reason is logged.
    Allow(&'static str),
    /// Answered 429 with `message`; `record` is written on the Workspace first (the first
    /// eviction of this pod), unless the request is a dry run.
    Hold {
        message: String,
        record: Option<EvictionRecord>,
    },
    /// Answered 404: the pod this eviction was meant for is gone and the pod of that name
    /// now is its replacement on a node nobody drains. `kubectl drain` retries an eviction
    /// by name only, so its retry after the workspace came back names the new pod; a 404
    /// is what it takes as "evicted and gone".
    Gone(String),
}

/// May this eviction of `pod` (read now; `None`: there is no such pod) proceed? `ws` is
/// the Workspace its label names, `by` the request's user.
pub fn decide(
    pod: Option<&Pod>,
    ws: Option<&Workspace>,
    node_drained: bool,
    by: &str,
    now: Timestamp,
    max_wait: SignedDuration,
) -> Verdict {
    let Some(pod) = pod else {
        return Verdict::Allow("no such pod");
    };
    if !pod.labels().contains_key(WORKSPACE_LABEL) {
        return Verdict::Allow("not a workspace pod");
    }
    let Some(ws) = ws else {
        return Verdict::Allow("its Workspace is gone");
    };
    if !controlled_by(pod, ws) {
        return Verdict::Allow("its Workspace does not control it");
    }
    let held = pod.finalizers().iter().any(|f| f == POD_FINALIZER);
    if !held || pod.annotations().contains_key(RELEASED_ANNOTATION) {
        return Verdict::Allow("lifeguard has released it");
    }
    let Some(node) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())
    else {
        return Verdict::Allow("it is on no node, so there is nothing to save");
    };
    if let Some(earlier) = lifeguard_api::eviction::recorded(ws)
        && Some(earlier.pod_uid.as_str()) != pod.metadata.uid.as_deref()
        && earlier.node != node
        && !node_drained
        && now
            < earlier
                .time
                .0
                .checked_add(max_wait)
                .unwrap_or(earlier.time.0)
    {
        return Verdict::Gone(format!(
            "the pod {} evicted from node {} is gone: lifeguard saved workspace {}/{} and \
             started it again on node {node}",
            pod.name_any(),
            earlier.node,
            ws.namespace().unwrap_or_default(),
            ws.name_any(),
        ));
    }
    let (first, record) = match recorded_for(ws, pod.metadata.uid.as_deref()) {
        Some(earlier) => (earlier, None),
        None => {
            let record = EvictionRecord {
                by: by.to_string(),
                node: node.clone(),
                pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
                time: Time(Timestamp::from_second(now.as_second()).unwrap_or(now)),
            };
            (record.clone(), Some(record))
        }
    };
    let allowed_from = first.time.0.checked_add(max_wait).unwrap_or(first.time.0);
    if now >= allowed_from {
        return Verdict::Allow("its maximum wait is over");
    }
    let workspace = format!("{}/{}", ws.namespace().unwrap_or_default(), ws.name_any());
    // What the controller is doing with the pod now, as the pod shows it: the stop waits
    // for its turn in the eviction budgets, then for its notice, before the pod is deleted.
    let doing = if pod.metadata.deletion_timestamp.is_some() {
        format!("lifeguard is saving workspace {workspace} before it leaves node {node}")
    } else if let Some(notice) = EvictionNotice::of(pod.metadata.annotations.as_ref()) {
        format!(
            "lifeguard told workspace {workspace} it stops at {} and saves it before it leaves \
             node {node}",
            notice.stop_at.0
        )
    } else {
        format!(
            "lifeguard will save workspace {workspace} before it leaves node {node}, as soon as \
             its eviction budget has room"
        )
    };
    let message = format!(
        "{doing}; retry (first asked by {} at {}; evicted as asked from {allowed_from} at the \
         latest)",
        if first.by.is_empty() {
            "an unnamed user"
        } else {
            &first.by
        },
        first.time.0,
    );
    Verdict::Hold { message, record }
}

/// Whether `pod`'s controlling owner is this very Workspace (by UID).
fn controlled_by(pod: &Pod, ws: &Workspace) -> bool {
    let Some(uid) = ws.metadata.uid.as_deref() else {
        return false;
    };
    pod.owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// The answer a held eviction gets: what a PodDisruptionBudget's refusal looks like, so
/// every drain tool retries it.
fn too_many_requests(message: String) -> Decision {
    Decision::Deny {
        code: 429,
        reason: "TooManyRequests",
        message,
    }
}

pub struct Evictions {
    client: Client,
    max_wait: SignedDuration,
}

impl Evictions {
    pub fn new(client: Client, max_wait: Duration) -> Self {
        Self {
            client,
            max_wait: SignedDuration::try_from(max_wait).unwrap_or(SignedDuration::MAX),
        }
    }

    /// Reads the pod and its Workspace, decides, and records a first eviction.
    pub async fn admit(&self, request: &AdmissionRequest) -> Decision {
        let (Some(namespace), Some(name)) = (request.namespace.as_deref(), request.name.as_deref())
        else {
            // The API server always names the pod of a pods/eviction request.
            return Decision::Allow;
        };
        match self.decided(request, namespace, name).await {
            Ok(decision) => decision,
            // The pod or its Workspace could not be read or written now: the drain tool
            // retries a 429, and lifeguard may then know more.
            Err(error) => {
                tracing::warn!(%namespace, pod = %name, %error, "eviction undecided; answered 429");
                too_many_requests(format!(
                    "lifeguard could not check workspace pod {namespace}/{name} before its \
                     eviction ({error}); retry"
                ))
            }
        }
    }

    async fn decided(
        &self,
        request: &AdmissionRequest,
        namespace: &str,
        name: &str,
    ) -> Result<Decision, String> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let pod = timed(pods.get_opt(name)).await?;
        let workspace = pod
            .as_ref()
            .and_then(|p| p.labels().get(WORKSPACE_LABEL).cloned());
        let workspaces: Api<Workspace> = Api::namespaced(self.client.clone(), namespace);
        let ws = match &workspace {
            Some(w) => timed(workspaces.get_opt(w)).await?,
            None => None,
        };
        // Whether the pod's node is being drained, read only for a pod that replaced an
        // evicted one: a drain's late retry by name must not evict the replacement.
        let replaced = match (&pod, &ws) {
            (Some(p), Some(w)) => lifeguard_api::eviction::recorded(w)
                .is_some_and(|r| Some(r.pod_uid.as_str()) != p.metadata.uid.as_deref()),
            _ => false,
        };
        let node_drained = match pod
            .as_ref()
            .and_then(|p| p.spec.as_ref()?.node_name.clone())
        {
            Some(node) if replaced => {
                let nodes: Api<Node> = Api::all(self.client.clone());
                // Unreadable: taken as drained, so the eviction is the normal one.
                timed(nodes.get_opt(&node))
                    .await
                    .map_or(true, |n| n.is_none_or(|n| being_drained(&n)))
            }
            _ => true,
        };
        let now = Timestamp::now();
        match decide(
            pod.as_ref(),
            ws.as_ref(),
            node_drained,
            &request.username,
            now,
            self.max_wait,
        ) {
            Verdict::Gone(message) => {
                tracing::info!(%namespace, pod = %name, user = %request.username, %message, "eviction of a replaced pod");
                Ok(Decision::Deny {
                    code: 404,
                    reason: "NotFound",
                    message,
                })
            }
            Verdict::Allow(why) => {
                tracing::info!(%namespace, pod = %name, user = %request.username, why, "eviction allowed");
                Ok(Decision::Allow)
            }
            Verdict::Hold { message, record } => {
                if let (Some(record), Some(workspace), false) = (record, workspace, request.dry_run)
                {
                    let patch = json!({"metadata": {"annotations": {
                        EVICTION_ANNOTATION: record.to_annotation(),
                    }}});
                    timed(workspaces.patch(
                        &workspace,
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    ))
                    .await?;
                    tracing::info!(%namespace, pod = %name, user = %request.username, node = %record.node, "eviction recorded; the workspace is saved first");
                }
                Ok(too_many_requests(message))
            }
        }
    }
}

/// Taints that the drain tools that do not cordon put on a node they empty.
const DRAIN_TAINTS: [&str; 3] = [
    "ToBeDeletedByClusterAutoscaler",
    "karpenter.sh/disrupted",
    "karpenter.sh/disruption",
];

/// Whether `node` is being emptied: cordoned (kubectl drain, managed upgrades, kured,
/// system-upgrade-controller) or tainted by an autoscaler about to remove it.
pub fn being_drained(node: &Node) -> bool {
    let Some(spec) = &node.spec else {
        return false;
    };
    spec.unschedulable == Some(true)
        || spec
            .taints
            .iter()
            .flatten()
            .any(|t| DRAIN_TAINTS.contains(&t.key.as_str()))
}

async fn timed<T>(
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(API_TIMEOUT, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!(
            "no answer from the API server within {API_TIMEOUT:?}"
        )),
    }
}

#[cfg(test)]
#[path = "eviction_tests.rs"]
mod tests;
