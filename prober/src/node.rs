//! Writes the verdict onto the Node: our condition, the optional taint, Events.
//!
//! Never fights other writers: the condition goes in by a strategic merge patch of
//! `nodes/status` that carries only our entry, and the taint list is rewritten with the
//! node's `resourceVersion` (a 409 means someone else wrote first: re-read and retry).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event as RuntimeEvent, EventType, Reporter};
use kube::{Client, Resource};
use lifeguard_api::events;
use serde_json::json;
use tokio::sync::watch;

use crate::container::describe;
use crate::report::{self, Shown};
use crate::verdict::{Judgement, Verdict};

const CALL_BUDGET: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(5);
const CONFLICT_RETRIES: u32 = 5;
const REPORTING_CONTROLLER: &str = "lifeguard.dev/prober";

/// What the checks publish to the reporter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// False until every check has run once: nothing is written before that.
    pub started: bool,
    pub judgement: Judgement,
}

pub struct NodeReporter {
    nodes: Api<Node>,
    node: String,
    taint: bool,
    heartbeat: SignedDuration,
    /// For the node Events (`lifeguard_api::events::publish`).
    client: Client,
    /// Who the node Events say reported them.
    reporter: Reporter,
    loaded: bool,
    node_ref: ObjectReference,
    shown: Option<Shown>,
    last_definitive: Option<Verdict>,
    taint_synced: Option<Verdict>,
}

async fn bounded<T>(
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(CALL_BUDGET, call).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(describe(&e)),
        Err(_) => Err("API server did not answer".into()),
    }
}

impl NodeReporter {
    pub fn new(
        client: Client,
        node: String,
        taint: bool,
        heartbeat: SignedDuration,
        instance: Option<String>,
    ) -> Self {
        Self {
            nodes: Api::all(client.clone()),
            node_ref: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.clone()),
                ..Default::default()
            },
            taint,
            heartbeat,
            client,
            reporter: Reporter {
                controller: REPORTING_CONTROLLER.into(),
                instance: Some(instance.unwrap_or_else(|| format!("lifeguard-prober-{node}"))),
            },
            loaded: false,
            shown: None,
            last_definitive: None,
            taint_synced: None,
            node,
        }
    }

    pub async fn run(mut self, mut verdicts: watch::Receiver<Published>) {
        // Checked often enough to keep heartbeats on time, rarely enough to cost nothing.
        let idle = Duration::try_from(self.heartbeat / 4)
            .unwrap_or(Duration::from_secs(60))
            .max(Duration::from_secs(5));
        loop {
            let published = verdicts.borrow_and_update().clone();
            let wait = if !published.started {
                idle
            } else {
                match self.sync(&published.judgement).await {
                    Ok(()) => idle,
                    Err(error) => {
                        tracing::warn!(node = %self.node, %error, "cannot report to the Node; retrying");
                        RETRY
                    }
                }
            };
            tokio::select! {
                changed = verdicts.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn sync(&mut self, judgement: &Judgement) -> Result<(), String> {
        if !self.loaded {
            let node = bounded(self.nodes.get(&self.node)).await?;
            self.node_ref.uid = node.meta().uid.clone();
            let conditions = node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_deref())
                .unwrap_or(&[]);
            self.shown = report::shown(conditions);
            self.last_definitive = match self.shown.as_ref().map(|s| s.status.as_str()) {
                Some("True") => Some(Verdict::Healthy),
                Some("False") => Some(Verdict::Unhealthy),
                _ => None,
            };
            self.loaded = true;
        }
        let now = Timestamp::now();
        let want = report::desired(judgement);
        if report::needs_write(self.shown.as_ref(), &want, now, self.heartbeat) {
            let (body, after) = report::patch(self.shown.as_ref(), &want, now);
            bounded(self.nodes.patch_status(
                &self.node,
                &PatchParams::default(),
                &Patch::Strategic(body),
            ))
            .await?;
            if self.shown.as_ref().map(|s| s.status.as_str()) != Some(want.status) {
                tracing::info!(node = %self.node, status = want.status, message = %want.message, "node condition {}", report::CONDITION_TYPE);
            }
            self.shown = Some(after);
            // The heartbeat also re-checks the taint, in case someone removed it.
            self.taint_synced = None;
        }
        if self.taint && self.taint_synced != Some(judgement.verdict) {
            self.sync_taint(judgement.verdict).await?;
            self.taint_synced = Some(judgement.verdict);
        }
        if judgement.verdict != Verdict::Unknown {
            if let Some((reason, warning)) = report::event(self.last_definitive, judgement.verdict)
            {
                self.publish(reason, warning, &judgement.message).await;
            }
            self.last_definitive = Some(judgement.verdict);
        }
        Ok(())
    }

    async fn sync_taint(&self, verdict: Verdict) -> Result<(), String> {
        for _ in 0..CONFLICT_RETRIES {
            let node = bounded(self.nodes.get(&self.node)).await?;
            let current = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or(&[]);
            let Some(next) = report::taints_after(current, verdict) else {
                return Ok(());
            };
            let body = json!({
                "metadata": {"resourceVersion": node.meta().resource_version},
                "spec": {"taints": next},
            });
            match tokio::time::timeout(
                CALL_BUDGET,
                self.nodes
                    .patch(&self.node, &PatchParams::default(), &Patch::Merge(body)),
            )
            .await
            {
                Ok(Ok(_)) => {
                    tracing::info!(node = %self.node, verdict = verdict.as_str(), "taint {} {}", report::TAINT_KEY,
                        if verdict == Verdict::Unhealthy { "set" } else { "removed" });
                    return Ok(());
                }
                Ok(Err(kube::Error::Api(s))) if s.code == 409 => continue,
                Ok(Err(e)) => return Err(format!("updating taints: {}", describe(&e))),
                Err(_) => return Err("updating taints: API server did not answer".into()),
            }
        }
        Err(format!(
            "updating taints: {CONFLICT_RETRIES} conflicts in a row"
        ))
    }

    async fn publish(&self, reason: &str, warning: bool, note: &str) {
        let decision = RuntimeEvent {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            note: Some(note.into()),
            action: "Probe".into(),
            secondary: None,
        };
        match tokio::time::timeout(
            CALL_BUDGET,
            events::publish(&self.client, &self.reporter, &self.node_ref, &decision),
        )
        .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %describe(&e), reason, "cannot publish event"),
            Err(_) => tracing::warn!(reason, "cannot publish event: API server did not answer"),
        }
    }
}
