//! The container check and the pod janitor: I/O against the API server.
//!
//! Every API call is bounded by what is left of the check's deadline. Whatever the API
//! server does wrong (no answer, 5xx, refusal) makes the run *unknown*: it says nothing
//! about the node. Only the pod's own fate (failed, or not finished while the API server
//! answered) is a failure.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, GetParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use tokio::time::{Instant, timeout_at};

pub use crate::error::describe;
use crate::error::{ApiError, Error};
use crate::probe_pod::{self, Blame, PodParams, PodState, Turn};
use crate::verdict::Outcome;

const POLL: Duration = Duration::from_millis(500);
/// Deleting is housekeeping: it gets its own short budget, and the janitor backs it up.
const DELETE_BUDGET: Duration = Duration::from_secs(5);

pub struct ContainerProbe {
    pub api: Api<Pod>,
    pub nodes: Api<Node>,
    pub node: String,
    pub image: String,
    pub pull_policy: String,
    pub deadline: Duration,
    pub ttl: Duration,
}

/// A refused create (403 RBAC or Pod Security, 409, 422 invalid, 429, 5xx quota or
/// webhook trouble) or no answer: the node was never asked to run anything, so the run is
/// inconclusive whatever the code.
pub fn create_refused(error: &kube::Error) -> Outcome {
    Outcome::Unknown(format!("creating the probe pod: {}", describe(error)))
}

/// The outcome of a probe pod still unfinished at the deadline: API trouble while
/// watching it is inconclusive; otherwise the last state seen decides whose fault it is
/// (an image that cannot be pulled is not the node's; a container never created is).
pub fn unfinished(
    api_trouble: Option<String>,
    seen: Option<(String, Blame)>,
    deadline: Duration,
) -> Outcome {
    match (api_trouble, seen) {
        (Some(trouble), _) => Outcome::Unknown(format!("watching the probe pod: {trouble}")),
        (None, Some((seen, Blame::Node))) => Outcome::Failure(format!(
            "probe pod did not finish within {deadline:?}: {seen}"
        )),
        (None, Some((seen, Blame::NotNode))) => Outcome::Unknown(format!(
            "probe pod did not start within {deadline:?}, not for the node's fault: {seen}"
        )),
        (None, None) => Outcome::Unknown("the probe pod was never read back".into()),
    }
}

impl ContainerProbe {
    pub fn new(client: Client, namespace: &str, node: String) -> Self {
        Self {
            api: Api::namespaced(client.clone(), namespace),
            nodes: Api::all(client),
            node,
            image: String::new(),
            pull_policy: "IfNotPresent".into(),
            deadline: Duration::from_secs(45),
            ttl: Duration::from_secs(120),
        }
    }

    /// Reads the Node: cordoned, or the uid that owns this turn's probe pod. An error is
    /// API trouble, which says nothing about the node.
    pub async fn turn(&self) -> Result<Turn, Error> {
        // From the API server's watch cache (resourceVersion 0): one read per node per
        // interval must not reach etcd; a cordon seen a moment late costs one probe pod,
        // which the drain evicts.
        let params = GetParams::any();
        let read = self.nodes.get_with(&self.node, &params);
        let node = tokio::time::timeout(self.deadline, read)
            .await
            .map_err(|_| ApiError::NoAnswer)?
            .map_err(ApiError::Failed)?;
        Ok(probe_pod::turn(&node)?)
    }

    /// Creates the throwaway pod, waits for it to succeed within the deadline, deletes it.
    pub async fn check(&self, now_unix: i64, node_uid: &str) -> Outcome {
        let deadline = Instant::now() + self.deadline;
        let ttl_secs = self.ttl.as_secs() as i64;
        let pod = match probe_pod::build(&PodParams {
            node: &self.node,
            node_uid,
            image: &self.image,
            pull_policy: &self.pull_policy,
            expires_unix: now_unix + ttl_secs,
            ttl_secs,
        }) {
            Ok(pod) => pod,
            Err(e) => return Outcome::Unknown(format!("cannot build the probe pod: {e}")),
        };
        let created =
            match timeout_at(deadline, self.api.create(&PostParams::default(), &pod)).await {
                Err(_) => {
                    return Outcome::Unknown(format!(
                        "API server did not answer the pod create within {:?}",
                        self.deadline
                    ));
                }
                Ok(Err(e)) => return create_refused(&e),
                Ok(Ok(pod)) => pod,
            };
        let name = created.name_any();
        let outcome = self.await_finish(&name, deadline).await;
        self.delete(&name).await;
        outcome
    }

    /// Outcome texts name no pod: they end up in the Node condition, which is rewritten
    /// whenever its message changes.
    async fn await_finish(&self, name: &str, deadline: Instant) -> Outcome {
        let mut seen: Option<(String, Blame)> = None;
        let mut api_trouble: Option<String>;
        loop {
            match timeout_at(deadline, self.api.get(name)).await {
                Err(_) => {
                    api_trouble = Some("API server did not answer".into());
                    break;
                }
                // Evicted by a drain and already gone, or reaped with its Node.
                Ok(Err(kube::Error::Api(s))) if s.code == 404 => {
                    return Outcome::Unknown(
                        "the probe pod was deleted before it finished (evicted by a drain?)".into(),
                    );
                }
                Ok(Err(e)) => api_trouble = Some(describe(&e)),
                Ok(Ok(pod)) => {
                    api_trouble = None;
                    match probe_pod::read(&pod) {
                        PodState::Finished(outcome) => return outcome,
                        PodState::Waiting { why, blame } => seen = Some((why, blame)),
                    }
                }
            }
            let next = Instant::now() + POLL;
            if next >= deadline {
                break;
            }
            tokio::time::sleep_until(next).await;
        }
        unfinished(api_trouble, seen, self.deadline)
    }

    async fn delete(&self, name: &str) {
        let params = DeleteParams::default().grace_period(0);
        match tokio::time::timeout(DELETE_BUDGET, self.api.delete(name, &params)).await {
            Ok(Ok(_)) => {}
            Ok(Err(kube::Error::Api(s))) if s.code == 404 => {}
            Ok(Err(e)) => {
                tracing::info!(pod = name, error = %describe(&e), "probe pod left for the janitor")
            }
            Err(_) => tracing::info!(
                pod = name,
                "probe pod delete timed out; left for the janitor"
            ),
        }
    }

    /// Deletes this node's throwaway pods past their expiry; returns how many.
    pub async fn sweep(&self, now_unix: i64) -> Result<u32, Error> {
        // Served from the API server's watch cache (resourceVersion 0, "any"): without it,
        // each node's prober read every pod of the probe namespace (the whole fleet's probe
        // pods) from etcd every interval. Only pods past their expiry are reaped, so a pod a
        // stale cache misses is one too young to reap anyway.
        let params = ListParams::default()
            .labels(&probe_pod::selector())
            .fields(&format!("spec.nodeName={}", self.node))
            .match_any();
        let list = tokio::time::timeout(self.deadline, self.api.list(&params))
            .await
            .map_err(|_| Error::in_step("listing probe pods", ApiError::NoAnswer))?
            .map_err(|e| Error::in_step("listing probe pods", ApiError::Failed(e)))?;
        let mut reaped = 0;
        for pod in list
            .items
            .iter()
            .filter(|p| probe_pod::expiry(p) <= now_unix)
        {
            let name = pod.name_any();
            let params = DeleteParams::default().grace_period(0);
            match tokio::time::timeout(DELETE_BUDGET, self.api.delete(&name, &params)).await {
                Ok(Ok(_)) => reaped += 1,
                Ok(Err(kube::Error::Api(s))) if s.code == 404 => {}
                Ok(Err(e)) => {
                    return Err(Error::in_step(
                        format!("deleting leftover {name}"),
                        ApiError::Failed(e),
                    ));
                }
                Err(_) => {
                    return Err(Error::in_step(
                        format!("deleting leftover {name}"),
                        ApiError::NoAnswer,
                    ));
                }
            }
            tracing::info!(pod = %name, "reaped an expired probe pod");
        }
        Ok(reaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: "m".into(),
            ..Default::default()
        }))
    }

    #[test]
    fn a_refused_create_is_never_the_nodes_fault() {
        for code in [400, 403, 404, 409, 422, 429, 500, 503, 504] {
            let outcome = create_refused(&api_error(code));
            assert!(
                matches!(&outcome, Outcome::Unknown(why) if why.starts_with("creating the probe pod: API server")),
                "{code}: {outcome:?}"
            );
        }
    }

    #[test]
    fn an_unfinished_pod_is_blamed_by_the_last_state_seen() {
        let deadline = Duration::from_secs(45);
        let seen = |why: &str, blame| Some((why.to_string(), blame));
        let cases = [
            (
                None,
                seen("Pending, container not created", Blame::Node),
                Outcome::Failure(
                    "probe pod did not finish within 45s: Pending, container not created".into(),
                ),
            ),
            (
                None,
                seen(
                    "Pending, container waiting: ImagePullBackOff",
                    Blame::NotNode,
                ),
                Outcome::Unknown(
                    "probe pod did not start within 45s, not for the node's fault: \
                     Pending, container waiting: ImagePullBackOff"
                        .into(),
                ),
            ),
            (
                Some("API server did not answer".to_string()),
                seen("Pending, container not created", Blame::Node),
                Outcome::Unknown("watching the probe pod: API server did not answer".into()),
            ),
            (
                None,
                None,
                Outcome::Unknown("the probe pod was never read back".into()),
            ),
        ];
        for (trouble, seen, want) in cases {
            assert_eq!(
                unfinished(trouble, seen.clone(), deadline),
                want,
                "{seen:?}"
            );
        }
    }

    #[test]
    fn api_errors_are_described_by_kind() {
        assert!(describe(&api_error(503)).starts_with("API server error 503"));
        assert!(describe(&api_error(429)).starts_with("API server error 429"));
        assert!(describe(&api_error(403)).starts_with("API server refused (403)"));
    }
}
