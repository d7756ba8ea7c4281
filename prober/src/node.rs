//! Writes the verdict onto the Node: our condition, the optional taint, Events.
//!
//! Never fights other writers: the condition goes in by a strategic merge patch of
//! `nodes/status` that carries only our entry, and the taint list is rewritten with the
//! node's `resourceVersion` (a 409 means someone else wrote first: re-read and retry).

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::events::{Event as RuntimeEvent, EventType, Reporter};
use kube::{Client, Resource};
use lifeguard_runtime::events;
use lifeguard_runtime::pages::Pages;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::{ApiError, Error};
use crate::fleet::{self, TaintDecision, TaintTurn};
use crate::report::{self, Shown};
use crate::state::{Published, Shared};
use crate::taint::{Fleet, TaintPolicy, TaintState, TaintStatus};
use crate::unproven::{self, UnprovenState, UnprovenStep};
use crate::verdict::{Judgement, Verdict};

const CALL_BUDGET: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(5);
const CONFLICT_RETRIES: u32 = 5;
const REPORTING_CONTROLLER: &str = "lifeguard.dev/prober";

pub struct NodeReporter {
    nodes: Api<Node>,
    node: String,
    taint: TaintPolicy,
    shared: Arc<Shared>,
    /// No taint is added before this instant (spread, or the next look after a hold).
    taint_due: Option<Instant>,
    heartbeat: SignedDuration,
    /// For the node Events (`lifeguard_runtime::events::publish`).
    client: Client,
    /// Who the node Events say reported them.
    reporter: Reporter,
    loaded: bool,
    node_ref: ObjectReference,
    shown: Option<Shown>,
    last_definitive: Option<Verdict>,
    taint_synced: Option<Verdict>,
    /// When an unhealthy, unproven node may count the unproven fleet again.
    unproven_look: Option<Instant>,
}

async fn bounded<T>(
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(CALL_BUDGET, call).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(ApiError::Failed(e)),
        Err(_) => Err(ApiError::NoAnswer),
    }
}

/// The step that removes the unproven taint and label, as its errors name it.
fn removing() -> String {
    format!("removing {}", unproven::UNPROVEN_KEY)
}

impl NodeReporter {
    pub fn new(
        client: Client,
        node: String,
        taint: TaintPolicy,
        heartbeat: SignedDuration,
        instance: Option<String>,
        shared: Arc<Shared>,
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
            shared,
            taint_due: None,
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
            unproven_look: None,
            node,
        }
    }

    pub async fn run(mut self, mut verdicts: watch::Receiver<Published>) {
        // Checked often enough to keep heartbeats on time, rarely enough to cost nothing.
        let idle = Duration::try_from(self.heartbeat / 4)
            .unwrap_or(Duration::from_secs(60))
            .max(Duration::from_secs(5));
        self.shared.set_taint(TaintStatus::new(&self.taint));
        loop {
            let published = verdicts.borrow_and_update().clone();
            let wait = if !published.started {
                idle
            } else {
                match self.sync(&published.judgement).await {
                    // Wake for a taint that waits for its spread or its next look.
                    Ok(()) => self.taint_due.map_or(idle, |due| {
                        idle.min(due.saturating_duration_since(Instant::now()))
                    }),
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

    async fn sync(&mut self, judgement: &Judgement) -> Result<(), Error> {
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
        if self.taint.enabled {
            self.sync_marks(judgement.verdict).await?;
        }
        // Whatever --taint says: a node that registered unproven must be released.
        self.sync_unproven(judgement.verdict).await?;
        // Neither unknown nor cordoned says anything about the node's health.
        if !matches!(judgement.verdict, Verdict::Unknown | Verdict::Cordoned) {
            if let Some((reason, warning)) = report::event(self.last_definitive, judgement.verdict)
            {
                self.publish(reason, warning, &judgement.message).await;
            }
            self.last_definitive = Some(judgement.verdict);
        }
        Ok(())
    }

    /// Brings the taint (and its mirror label) in line with the verdict; a new taint
    /// waits for its spread and for the fleet guard.
    async fn sync_marks(&mut self, verdict: Verdict) -> Result<(), Error> {
        if verdict != Verdict::Unhealthy {
            self.taint_due = None;
        }
        let shown = self.shared.taint_state();
        let spread = self.taint.spread.mul_f64(crate::checks::unit_random());
        match fleet::taint_turn(
            verdict,
            self.taint_synced,
            &shown,
            self.taint_due,
            Instant::now(),
            spread,
        ) {
            TaintTurn::Nothing => return Ok(()),
            TaintTurn::WaitUntil(due) => {
                self.taint_due = Some(due);
                if !matches!(shown, TaintState::HeldBack { .. }) {
                    self.shared.set_taint(TaintStatus {
                        state: TaintState::Pending,
                        ..TaintStatus::new(&self.taint)
                    });
                }
                return Ok(());
            }
            TaintTurn::Write => {}
        }
        let state = self.write_marks(verdict).await?;
        let status = TaintStatus {
            state: state.clone(),
            ..TaintStatus::new(&self.taint)
        };
        match state {
            TaintState::HeldBack { .. } => {
                // Looked at again every heartbeat, not every turn: in a fleet-wide failure
                // every prober holds back, and each look lists the tainted nodes.
                let again = Duration::try_from(self.heartbeat).unwrap_or(RETRY);
                self.taint_due = Some(Instant::now() + again);
            }
            _ => {
                self.taint_synced = Some(verdict);
                self.taint_due = None;
            }
        }
        self.shared.set_taint(status);
        Ok(())
    }

    async fn write_marks(&mut self, verdict: Verdict) -> Result<TaintState, Error> {
        for _ in 0..CONFLICT_RETRIES {
            let node = bounded(self.nodes.get(&self.node)).await?;
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or(&[]);
            let Some(change) = report::marks(
                taints,
                node.metadata.labels.as_ref(),
                verdict,
                node.metadata.resource_version.as_deref(),
            ) else {
                return Ok(TaintState::settled(taints));
            };
            if change.adds_taint {
                let fleet = self.count_fleet().await?;
                if let TaintDecision::HoldBack(why) = fleet::decide(fleet, self.taint.max_share) {
                    if !matches!(self.shared.taint_state(), TaintState::HeldBack { .. }) {
                        tracing::warn!(node = %self.node, nodes = fleet.nodes, tainted = fleet.tainted, "{why}");
                        self.publish("TaintHeldBack", true, &why).await;
                    }
                    return Ok(TaintState::HeldBack { fleet, why });
                }
            }
            match tokio::time::timeout(
                CALL_BUDGET,
                self.nodes.patch(
                    &self.node,
                    &PatchParams::default(),
                    &Patch::Merge(change.body),
                ),
            )
            .await
            {
                Ok(Ok(node)) => {
                    let taints = node
                        .spec
                        .as_ref()
                        .and_then(|s| s.taints.as_deref())
                        .unwrap_or(&[]);
                    let state = TaintState::settled(taints);
                    let tainted = state == TaintState::Applied;
                    tracing::info!(node = %self.node, verdict = verdict.as_str(), tainted,
                        "taint and label {} {}", report::TAINT_KEY,
                        if tainted { "in place" } else { "absent" });
                    return Ok(state);
                }
                Ok(Err(kube::Error::Api(s))) if s.code == 409 => continue,
                Ok(Err(e)) => return Err(Error::in_step("updating taints", ApiError::Failed(e))),
                Err(_) => return Err(Error::in_step("updating taints", ApiError::NoAnswer)),
            }
        }
        Err(Error::Conflicts {
            step: "updating taints".into(),
            retries: CONFLICT_RETRIES,
        })
    }

    /// Removes the unproven taint and label once the verdict allows it (`unproven::step`).
    async fn sync_unproven(&mut self, verdict: Verdict) -> Result<(), Error> {
        let state = self.shared.unproven_state();
        let due = self.unproven_look.is_none_or(|at| Instant::now() >= at);
        // A settled node is looked at again each heartbeat (a Node deleted and registered
        // again under the same name while this prober ran carries the taint anew); an
        // unhealthy unproven one counts the fleet at most that often.
        let waiting =
            state.settled() || (state == UnprovenState::Tainted && verdict != Verdict::Healthy);
        if waiting && !due {
            return Ok(());
        }
        let again = Duration::try_from(self.heartbeat).unwrap_or(RETRY);
        self.unproven_look = Some(Instant::now() + again);
        let mut fleet = None;
        for _ in 0..CONFLICT_RETRIES {
            let node = bounded(self.nodes.get(&self.node)).await?;
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or(&[]);
            let tainted = taints.iter().any(|t| t.key == unproven::UNPROVEN_KEY);
            let next = match unproven::step(tainted, verdict, fleet, self.taint.max_share) {
                // Settled stays as it was said (Proven, Released) while the taint is gone.
                UnprovenStep::Keep if !tainted && state.settled() => return Ok(()),
                UnprovenStep::Keep => {
                    self.shared.set_unproven(if tainted {
                        UnprovenState::Tainted
                    } else {
                        UnprovenState::NotTainted
                    });
                    return Ok(());
                }
                UnprovenStep::CountFleet => {
                    fleet = Some(self.count_labelled(unproven::UNPROVEN_KEY).await?);
                    continue;
                }
                UnprovenStep::Remove(next) => next,
            };
            let rest: Vec<_> = taints
                .iter()
                .filter(|t| t.key != unproven::UNPROVEN_KEY)
                .cloned()
                .collect();
            let body = serde_json::json!({
                "metadata": {
                    "resourceVersion": node.metadata.resource_version,
                    "labels": {unproven::UNPROVEN_KEY: null},
                },
                "spec": {"taints": rest},
            });
            let patched = tokio::time::timeout(
                CALL_BUDGET,
                self.nodes
                    .patch(&self.node, &PatchParams::default(), &Patch::Merge(body)),
            )
            .await;
            match patched {
                Ok(Ok(_)) => {}
                Ok(Err(kube::Error::Api(s))) if s.code == 409 => continue,
                Ok(Err(e)) => return Err(Error::in_step(removing(), ApiError::Failed(e))),
                Err(_) => return Err(Error::in_step(removing(), ApiError::NoAnswer)),
            }
            let (reason, warning, message) = match &next {
                UnprovenState::Released { why, .. } => ("UnprovenReleased", true, why.clone()),
                _ => (
                    "NodeProven",
                    false,
                    format!(
                        "first healthy verdict: {} removed, the node takes workspaces",
                        unproven::UNPROVEN_KEY
                    ),
                ),
            };
            tracing::info!(node = %self.node, "{message}");
            self.publish(reason, warning, &message).await;
            self.shared.set_unproven(next);
            return Ok(());
        }
        Err(Error::Conflicts {
            step: removing(),
            retries: CONFLICT_RETRIES,
        })
    }

    /// All Nodes, and the other Nodes carrying `label` (metadata only).
    async fn count_labelled(&self, label: &str) -> Result<Fleet, Error> {
        let nodes = self.count_nodes().await?;
        let labelled = bounded(self.nodes.list_metadata(
            // resourceVersion 0: served from the API server's cache (every version
            // does), not a scan of etcd. No limit: the count must be whole.
            &ListParams::default().labels(label).at("0"),
        ))
        .await?
        .items
        .iter()
        .filter(|n| n.metadata.name.as_deref() != Some(self.node.as_str()))
        .count() as u64;
        Ok(Fleet {
            nodes,
            tainted: labelled,
        })
    }

    /// All Nodes, and the other Nodes labelled as tainted.
    async fn count_fleet(&self) -> Result<Fleet, Error> {
        self.count_labelled(report::TAINTED_LABEL).await
    }

    /// All Nodes: a list of one, the API server counts the rest.
    async fn count_nodes(&self) -> Result<u64, Error> {
        let all = bounded(self.nodes.list_metadata(&ListParams::default().limit(1))).await?;
        let listed = all.items.len() as u64;
        Ok(
            match (
                all.metadata.remaining_item_count,
                all.metadata.continue_.as_deref(),
            ) {
                (Some(rest), _) => listed + rest.max(0) as u64,
                (None, None | Some("")) => listed,
                // A server that does not count: page through names only.
                (None, Some(_)) => self.count_paged().await?,
            },
        )
    }

    async fn count_paged(&self) -> Result<u64, Error> {
        let mut pages = Pages::new(ListParams::default().limit(500));
        let mut count = 0;
        while let Some(page) = bounded(pages.next_metadata(&self.nodes)).await? {
            count += page.len() as u64;
        }
        Ok(count)
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
            Ok(Err(e)) => {
                tracing::warn!(error = %ApiError::Failed(e), reason, "cannot publish event")
            }
            Err(_) => tracing::warn!(reason, "cannot publish event: API server did not answer"),
        }
    }
}
