//! The Workspace reconciler's I/O: reads the Workspace and its pod, asks `plan` for the
//! next action and performs it. All decisions live in `plan`; this file only does I/O.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use lifeguard_api::names::{WORKSPACE_FINALIZER, pod_name};
use lifeguard_api::notice::{MaintenanceNotice, notice_for};
use lifeguard_api::rejection::RejectionClass;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

use crate::disposal;
use crate::finalizers::{self, Deletion, PodLeft, Removal};
use crate::node_loss::{self, NodeLossStep};
use crate::notice;
use crate::phase_tally::WorkspaceKey;
use crate::pod_echoes::{Known, Settled};
use crate::podspec;
use crate::workspace::plan::{
    Action, CreateRefusal, REJECTED_AFTER_RUNNING, create_retry_at, created_status, plan_observed,
    record_create_refusal,
};
use crate::workspace::pod_writes::{self, PodView, delete_pod};
use crate::workspace::{eviction, observe, pod_read, start_latency};
use crate::{Context, Error, FIELD_MANAGER};

/// How soon to look again after a write: the watch event usually comes first.
const AFTER_WRITE: Duration = Duration::from_millis(500);

/// How many writes of the Workspace one reconcile may chain (each planned again with the
/// Workspace the write returned) before it leaves the rest to a requeue.
const CHAINED_WRITES: usize = 3;

/// What one pass over a Workspace did.
enum Pass {
    /// Done: look again as the requeue says.
    Done(Requeue),
    /// It only wrote the Workspace (its status, or its finalizer), and the write returned
    /// the Workspace as now stored: plan again with it.
    Rewritten(Box<Workspace>),
    /// Its create found the pod's name taken, though the pod was taken as absent (from the
    /// cache, `pod_read`, or a read that raced the create): read the pod and plan again.
    PodExists,
    /// It created the pod and wrote the status: plan again with both as the API returned
    /// them. That pass sets the start's timer, which the pod's first watch event (its
    /// echo, dropped by `pod_names`) would otherwise have cost a reconcile and two reads.
    Created(Box<(Workspace, Pod)>),
    /// It deleted or released the pod: plan again with the pod as that write left it
    /// (`None`: gone). The write's watch events are its echoes, dropped by `pod_names`, so
    /// a stop is two reconciles (the mark, the containers stopped), not five.
    PodWritten(Option<Box<Pod>>),
}

fn action_name(action: &Action) -> &'static str {
    match action {
        Action::AddWorkspaceFinalizer => "add_finalizer",
        Action::CreatePod {
            recreation: None, ..
        } => "create_pod",
        Action::CreatePod { .. } => "recreate_pod",
        Action::UpdateStatus(_) => "update_status",
        Action::RecordRejection(_) => "record_rejection",
        Action::RecordRejectedAfterRunning(_) => "record_rejected_after_running",
        Action::GiveUp(_) => "give_up",
        Action::Refuse(_) => "refuse",
        Action::RecordStartFailure { .. } => "start_failed",
        Action::ForceDeletePod { .. } => "force_delete_pod",
        Action::RemoveStoppedPod => "remove_stopped_pod",
        Action::DeletePod { .. } => "delete_pod",
        Action::ReleasePod => "release_pod",
        Action::RecordDisposal(_) => "record_disposal",
        Action::RecordEviction { .. } => "record_eviction",
        Action::RemoveWorkspaceFinalizer => "remove_finalizer",
        Action::WaitUntil(_) => "wait",
        Action::Idle => "idle",
    }
}

/// The message of the `Failed` condition, which is what a failing workspace's Event says.
fn failed_message(status: &lifeguard_api::WorkspaceStatus) -> String {
    failed_condition(status).1
}

/// The reason and message of `status`'s `Failed` condition.
fn failed_condition(status: &lifeguard_api::WorkspaceStatus) -> (String, String) {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == lifeguard_api::workspace::condition::FAILED)
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

/// The whole status, by server-side apply; a status that ends the workspace also takes its
/// maintenance notice back (`notice::settled`).
/// Writes the status; a write that finishes a start (Running, or Failed before it ran) is
/// timed for the start SLO once it is stored (`start_latency`).
async fn write_status(
    ctx: &Context,
    api: &Api<Workspace>,
    ws: &Workspace,
    pod: Option<&Pod>,
    status: &WorkspaceStatus,
) -> Result<Workspace, Error> {
    let now = Timestamp::now();
    let status = notice::settled(ws, status.clone(), now);
    let stored =
        lifeguard_runtime::status::apply(api, &ws.name_any(), FIELD_MANAGER, &status).await?;
    if let Some(window) = crate::window::stop_ended::window_to_wake(ws, &status) {
        // The window surveys from the watch, which may not show this write yet.
        if let (Some(namespace), Some(phase)) = (ws.namespace(), status.phase) {
            ctx.survey_index
                .note_stop_ended(&namespace, &ws.name_any(), phase);
        }
        ctx.surveys.stop_ended(window);
        // Full or closed: the window's own poll still comes.
        let _ = ctx.stop_ended.try_send(ObjectRef::new(window));
    }
    if let Some((outcome, seconds)) = start_latency::observation(ws, pod, &status, now) {
        ctx.metrics
            .workspace_starts
            .with_label_values(&[outcome])
            .observe(seconds);
    }
    Ok(stored)
}

/// The controller caches Workspaces as metadata only (10,000 full pod templates would cost
/// far more memory) and reads the Workspace and its pod fresh for each reconcile; only a
/// new Workspace's pod is taken as absent from the cache of pod names (`pod_read`).
///
/// A pass that only wrote the Workspace (its status or finalizer) is followed by another
/// with the Workspace that write returned, instead of a fresh read after the write's watch event (the controller's
/// watch drops events that change nothing but the status: `run.rs`). That saves a
/// reconcile and its two GETs per status change, most of a start's API calls at scale.
pub async fn reconcile(
    meta: Arc<PartialObjectMeta<Workspace>>,
    ctx: Arc<Context>,
) -> Result<Requeue, Error> {
    let namespace = meta.namespace().ok_or(Error::NoNamespace)?;
    let workspaces: Api<Workspace> = Api::namespaced(ctx.client.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let name = meta.name_any();
    let key = WorkspaceKey::new(&namespace, &name);
    // Before the Workspace's read: a pod event that comes while it is read is then held
    // for this reconcile to explain, instead of queueing the next one behind it.
    let pod_name = pod_name(&name);
    let view = PodView::new(&ctx.pods, &namespace, &pod_name);
    let Some(mut ws) = workspaces.get_opt(&name).await? else {
        ctx.phases.forget(key);
        return Ok(Requeue::await_change());
    };
    ctx.phases.note(key, ws.phase());
    let planned = async {
        let read = |pod: Option<Pod>| {
            view.read(pod.as_ref());
            pod
        };
        let mut pod = if pod_read::must_read(&ws, ctx.pods.lookup(&namespace, &pod_name)) {
            read(pods.get_opt(&pod_name).await?)
        } else {
            None
        };
        for _ in 0..=CHAINED_WRITES {
            match reconcile_pass(&ctx, &workspaces, &pods, &ws, pod.as_ref()).await? {
                Pass::Done(requeue) => return Ok(requeue),
                Pass::Rewritten(stored) => ws = *stored,
                Pass::PodExists => pod = read(pods.get_opt(&pod_name).await?),
                Pass::Created(created) => (ws, pod) = (created.0, Some(created.1)),
                Pass::PodWritten(left) => pod = left.map(|p| *p),
            }
            ctx.phases.note(key, ws.phase());
        }
        Ok(Requeue::requeue(AFTER_WRITE))
    }
    .await;
    match (view.settle(), planned) {
        (Settled::LookAgain, Ok(_)) => {
            tracing::debug!(workspace = %name, %namespace, "pod changed while written; looking again");
            Ok(Requeue::requeue(Duration::ZERO))
        }
        (_, planned) => planned,
    }
}

/// The pass after a delete of the pod: plan again with what it left, or without the pod
/// when it was removed already; when the name holds another pod, that pod's watch event
/// comes, and a look a moment later is the backstop.
fn planned_after(deletion: Deletion) -> Pass {
    match deletion {
        Deletion::AlreadyGone => Pass::PodWritten(None),
        Deletion::Deleted(left) => planned_with(left),
        Deletion::Replaced => Pass::Done(Requeue::requeue(AFTER_WRITE)),
    }
}

/// The pass after a write of the pod: plan again with what it left.
fn planned_with(left: PodLeft) -> Pass {
    Pass::PodWritten(match left {
        PodLeft::Stored(pod) => Some(pod),
        PodLeft::Gone { .. } => None,
    })
}

/// One pass: node loss, then the maintenance notice, then the start/stop plan.
async fn reconcile_pass(
    ctx: &Arc<Context>,
    workspaces: &Api<Workspace>,
    pods: &Api<Pod>,
    ws: &Workspace,
    pod: Option<&Pod>,
) -> Result<Pass, Error> {
    let name = ws.name_any();
    let now = Timestamp::now();
    let (recheck_node, node_change) = match node_loss_step(ctx, ws, pod, now) {
        NodeLossStep::Nothing => (None, None),
        NodeLossStep::RecheckAt(at) => (Some(at), None),
        NodeLossStep::Lost { status, note } => (
            None,
            Some((status, note, EventType::Warning, "NodeLost", "node_lost")),
        ),
        NodeLossStep::Back { status, note } => (
            None,
            Some((
                status,
                note,
                EventType::Normal,
                "NodeRecovered",
                "node_back",
            )),
        ),
    };
    if let Some((status, note, type_, reason, action)) = node_change {
        let stored = write_status(ctx, workspaces, ws, pod, &status).await?;
        ctx.metrics.reconciles.with_label_values(&[action]).inc();
        ctx.event(ws, type_, reason, note).await;
        return Ok(Pass::Rewritten(Box::new(stored)));
    }
    let wanted = wanted_notice(ctx, ws, now).await?;
    let mut notice_change_at = None;
    if let Some((desired, next_change)) = &wanted {
        notice_change_at = *next_change;
        if let Some(change) = notice::step(ws, desired.as_ref(), now) {
            let stored = write_status(ctx, workspaces, ws, pod, &change.status).await?;
            ctx.metrics.reconciles.with_label_values(&["notice"]).inc();
            if let Some((reason, note)) = change.event {
                if let (notice::REASON_SCHEDULED, Some(n)) = (reason, desired) {
                    ctx.metrics.notices.with_label_values(&[&n.window]).inc();
                }
                let doc = crate::notify::document::notice_change(ws, reason, desired.as_ref(), now);
                if let Some(doc) = doc {
                    ctx.notify.send(doc);
                }
                ctx.event(ws, EventType::Normal, reason, note).await;
            }
            return Ok(Pass::Rewritten(Box::new(stored)));
        }
        if let Some(patch) = pod.and_then(|p| notice::pod_patch(ws, p, desired.as_ref())) {
            match pods
                .patch(
                    &pod_name(&name),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    let requeue = match reconcile_plan(ctx, ws, workspaces, pods, pod, now).await? {
        Pass::Done(requeue) => requeue,
        written => return Ok(written),
    };
    // An idle workspace looks again when its node counts as lost (a node that is not
    // Ready yet) or when a window's notice starts or ends; one with a timer of its own
    // looks again at that timer, and again.
    let look_again = [recheck_node, notice_change_at].into_iter().flatten().min();
    Ok(Pass::Done(match look_again {
        Some(at) if requeue == Requeue::await_change() => Requeue::requeue(
            at.duration_since(now)
                .unsigned_abs()
                .max(Duration::from_millis(100)),
        ),
        _ => requeue,
    }))
}

/// The notice this workspace should carry now, and when that may next change; `None`
/// until the window cache is filled (an empty cache would withdraw every notice).
async fn wanted_notice(
    ctx: &Context,
    ws: &Workspace,
    now: Timestamp,
) -> Result<Option<(Option<MaintenanceNotice>, Option<Timestamp>)>, Error> {
    if !ctx.windows.ready.load(Ordering::Acquire) {
        return Ok(None);
    }
    // Invalid windows are reported on the window itself (its Valid condition).
    let windows: Vec<CompiledWindow> = ctx
        .windows
        .store
        .state()
        .iter()
        .filter(|w| w.spec.notice.is_some())
        .filter_map(|w| CompiledWindow::compile(w).ok())
        .collect();
    let next_change = lifeguard_api::notice::next_change(&windows, now);
    if windows.is_empty() || !notice::eligible(ws) {
        return Ok(Some((None, next_change)));
    }
    let namespace_labels = if windows.iter().any(CompiledWindow::selects_namespaces) {
        let namespace = ws.namespace().ok_or(Error::NoNamespace)?;
        match ctx.namespaces.labels(&namespace) {
            Some(labels) => labels,
            // Not in the cache yet (it is filling, or the namespace is brand new).
            None => {
                let api: Api<PartialObjectMeta<Namespace>> = Api::all(ctx.client.clone());
                api.get_metadata(&namespace)
                    .await?
                    .metadata
                    .labels
                    .unwrap_or_default()
            }
        }
    } else {
        BTreeMap::new()
    };
    // A node-scoped window tells only the workspaces whose pod is on a node it selects.
    let node_labels = ws
        .status
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .and_then(|n| ctx.nodes.get(&ObjectRef::new(n)))
        .and_then(|n| n.metadata.labels.clone());
    let windows = crate::window::nodes::for_node(windows, node_labels.as_ref());
    let desired = notice_for(&windows, &namespace_labels, ws.labels(), now);
    Ok(Some((desired, next_change)))
}

/// The NodeLost step for this workspace, once the node cache is filled.
fn node_loss_step(
    ctx: &Context,
    ws: &Workspace,
    pod: Option<&Pod>,
    now: Timestamp,
) -> NodeLossStep {
    if !ctx.nodes_ready.load(Ordering::Acquire) {
        return NodeLossStep::Nothing;
    }
    let node = pod
        .filter(|p| crate::workspace::plan::controlled_by(p, ws))
        .and_then(|p| p.spec.as_ref()?.node_name.clone());
    let health = node
        .as_ref()
        .map(|n| node_loss::node_health(ctx.nodes.get(&ObjectRef::new(n)).as_deref()));
    node_loss::step(
        ws,
        node.as_deref().zip(health.as_ref()),
        now,
        ctx.settings.node_lost_after,
    )
}

async fn reconcile_plan(
    ctx: &Arc<Context>,
    ws: &Workspace,
    workspaces: &Api<Workspace>,
    pods: &Api<Pod>,
    pod: Option<&Pod>,
    now: Timestamp,
) -> Result<Pass, Error> {
    let name = ws.name_any();
    let namespace = ws.namespace().unwrap_or_default();
    let observed = observe::observe(ctx, ws, pod).await?;
    let action = plan_observed(ws, pod, &observed, now, &ctx.settings);
    ctx.metrics
        .reconciles
        .with_label_values(&[action_name(&action)])
        .inc();
    tracing::debug!(workspace = %name, %namespace, action = action_name(&action), "reconcile");
    match action {
        Action::AddWorkspaceFinalizer => {
            if let Some(stored) = finalizers::add(workspaces, ws, WORKSPACE_FINALIZER).await? {
                // The next step (usually creating the pod) needs nothing read again.
                return Ok(Pass::Rewritten(Box::new(stored)));
            }
        }
        Action::CreatePod { start, recreation } => {
            return create_pod(ctx, ws, workspaces, pods, start, recreation).await;
        }
        Action::UpdateStatus(status) => {
            let stored = write_status(ctx, workspaces, ws, pod, &status).await?;
            return Ok(Pass::Rewritten(Box::new(stored)));
        }
        Action::RecordRejection(status) => {
            write_status(ctx, workspaces, ws, pod, &status).await?;
            if let Some(r) = &status.last_rejection {
                let class = r.class.unwrap_or(RejectionClass::Transient);
                let label = ctx.settings.reasons.classify(&r.reason).label;
                ctx.metrics
                    .rejections
                    .with_label_values(&[label.as_str(), class.label()])
                    .inc();
                let (reason, outcome) = match class {
                    RejectionClass::Transient => (
                        "PodRejected",
                        "transient: re-created after the backoff while retries remain",
                    ),
                    RejectionClass::Permanent => (
                        "PodRejectedPermanently",
                        "re-creating cannot help; the workspace has failed",
                    ),
                };
                let note = format!(
                    "kubelet on {} rejected pod {}: {} ({}); {outcome}",
                    r.node,
                    pod_name(&name),
                    r.reason,
                    r.message
                );
                ctx.event(ws, EventType::Warning, reason, note).await;
            }
        }
        Action::RecordRejectedAfterRunning(status) => {
            write_status(ctx, workspaces, ws, pod, &status).await?;
            if let Some(r) = &status.last_rejection {
                let label = ctx.settings.reasons.classify(&r.reason).label;
                ctx.metrics
                    .rejections_after_running
                    .with_label_values(&[label.as_str()])
                    .inc();
                let note = format!(
                    "kubelet on {} refused pod {} after it had run: {} ({}); it is not re-created",
                    r.node,
                    pod_name(&name),
                    r.reason,
                    r.message
                );
                ctx.event(ws, EventType::Warning, REJECTED_AFTER_RUNNING, note)
                    .await;
            }
        }
        Action::Refuse(status) => {
            write_status(ctx, workspaces, ws, pod, &status).await?;
            let (reason, message) = failed_condition(&status);
            ctx.event(ws, EventType::Warning, &reason, message).await;
        }
        Action::RecordStartFailure {
            status,
            blocker,
            class,
        } => {
            write_status(ctx, workspaces, ws, pod, &status).await?;
            ctx.metrics
                .start_failures
                .with_label_values(&[blocker, class])
                .inc();
            let message = status
                .last_rejection
                .as_ref()
                .map_or(String::new(), |r| r.message.clone());
            let (reason, note) = if status.phase == Some(WorkspacePhase::Failed) {
                (
                    "StartFailed",
                    format!("{message}; the workspace has failed"),
                )
            } else {
                (
                    crate::workspace::start::REASON_START_TIMEOUT,
                    format!("{message}; re-creating the pod, preferring another node"),
                )
            };
            ctx.event(ws, EventType::Warning, reason, note).await;
        }
        Action::RemoveStoppedPod => {
            // Removed already: the kubelet was as quick, and the stop is recorded now.
            if let Some(pod) = &pod {
                return Ok(planned_after(delete_pod(ctx, pods, pod, Some(0)).await?));
            }
        }
        Action::ForceDeletePod { cause } => {
            if let Some(pod) = &pod {
                let deletion = delete_pod(ctx, pods, pod, Some(0)).await?;
                if let Deletion::Deleted(_) = deletion {
                    ctx.metrics
                        .pods_force_deleted
                        .with_label_values::<&str>(&[])
                        .inc();
                    let note = format!("force-deleted pod {}: {cause}", pod.name_any());
                    ctx.event(ws, EventType::Warning, "PodForceDeleted", note)
                        .await;
                }
                return Ok(planned_after(deletion));
            }
        }
        Action::GiveUp(status) => {
            write_status(ctx, workspaces, ws, pod, &status).await?;
            let reason = status
                .last_rejection
                .as_ref()
                .map_or("unknown", |r| r.reason.as_str());
            ctx.metrics.give_ups.with_label_values(&[reason]).inc();
            ctx.event(ws, EventType::Warning, "GaveUp", failed_message(&status))
                .await;
        }
        Action::DeletePod {
            grace_seconds,
            cause,
        } => {
            let grace = grace_seconds.map(|g| g as u32);
            if let Some(pod) = &pod {
                if eviction::budgeted(ws, pod)
                    && let Some(pass) = eviction_turn(ctx, ws, pods, pod, now).await?
                {
                    return Ok(pass);
                }
                let deletion = delete_pod(ctx, pods, pod, grace).await?;
                if let Deletion::Deleted(_) = deletion {
                    let note = format!("deleted pod {}: {cause}", pod.name_any());
                    ctx.event(ws, EventType::Normal, "PodDeleted", note).await;
                }
                return Ok(planned_after(deletion));
            }
        }
        Action::RecordEviction { status, note } => {
            let stored = write_status(ctx, workspaces, ws, pod, &status).await?;
            ctx.event(
                ws,
                EventType::Normal,
                lifeguard_api::eviction::REASON_EVICTED,
                note,
            )
            .await;
            return Ok(Pass::Rewritten(Box::new(stored)));
        }
        Action::RecordDisposal(status) => {
            let stored = write_status(ctx, workspaces, ws, pod, &status).await?;
            let outcome = status
                .conditions
                .iter()
                .find(|c| c.type_ == lifeguard_api::workspace::condition::DISPOSAL_CONFIRMED);
            if let Some(c) = outcome {
                if c.status == "True" {
                    ctx.event(
                        ws,
                        EventType::Normal,
                        "DisposalConfirmed",
                        c.message.clone(),
                    )
                    .await;
                } else {
                    let reason = if c.reason == disposal::REASON_TIMED_OUT {
                        "DisposalTimedOut"
                    } else {
                        "DisposalFailed"
                    };
                    let label = disposal::unconfirmed_label(&c.reason);
                    ctx.metrics
                        .disposals_unconfirmed
                        .with_label_values(&[label])
                        .inc();
                    ctx.event(ws, EventType::Warning, reason, c.message.clone())
                        .await;
                }
            }
            // The release comes next and needs nothing read again: the echo of this write
            // is filtered out (`trigger`), so waiting for it would cost the 500 ms requeue
            // on every stop of a drain.
            return Ok(Pass::Rewritten(Box::new(stored)));
        }
        Action::ReleasePod => {
            let released =
                pod_writes::release_pod(ctx, pods, (&namespace, &pod_name(&name)), pod).await?;
            let removal = released.removal;
            if matches!(removal, Removal::Removed { .. }) {
                let phase = ws.phase();
                let note = format!(
                    "released pod {}: final state recorded ({}), disposal done",
                    pod_name(&name),
                    phase.map_or("unknown", |p| p.as_str())
                );
                ctx.event(ws, EventType::Normal, "PodReleased", note).await;
            }
            count_removal(ctx, "Pod", removal);
            if let Some(left) = released.writes.into_iter().last() {
                return Ok(planned_with(left));
            }
        }
        Action::RemoveWorkspaceFinalizer => {
            let removal = finalizers::remove(workspaces, ws, WORKSPACE_FINALIZER).await;
            count_removal(ctx, "Workspace", removal?);
        }
        Action::WaitUntil(t) => {
            let wait = t
                .duration_since(now)
                .unsigned_abs()
                .max(Duration::from_millis(100));
            return Ok(Pass::Done(Requeue::requeue(wait)));
        }
        // Nothing changes for an idle workspace until its Workspace or pod does, and both
        // are watched. A periodic requeue would keep a scheduler entry per workspace (about
        // 5 MB with 10,000) and cost a GET pair per workspace every period.
        Action::Idle => return Ok(Pass::Done(Requeue::await_change())),
    }
    Ok(Pass::Done(Requeue::requeue(AFTER_WRITE)))
}

fn count_removal(ctx: &Context, kind: &str, removal: Removal) {
    if let Removal::Removed { conflicts } = removal {
        ctx.metrics
            .finalizer_removals
            .with_label_values(&[kind])
            .inc();
        ctx.metrics
            .finalizer_conflicts
            .with_label_values(&[kind])
            .inc_by(conflicts as u64);
    }
}

/// How often an evicted workspace waiting for an eviction budget looks again.
const EVICTION_BUDGET_RECHECK: Duration = Duration::from_secs(2);

/// How long a notice this replica gave counts toward the cluster's eviction budget without
/// the pod watch showing it: the watch shows a pod's change within a second or two, and
/// counting a pod twice is impossible (`eviction::cluster_in_flight`), so a long horizon
/// only makes a brief over-count after a pod is released quickly.
const TOLD_HORIZON: jiff::SignedDuration = jiff::SignedDuration::from_secs(30);

/// The stop of evicted `pod`, before its delete: waits for a slot in the node's and the
/// cluster's eviction budgets, tells the workspace (pod annotation, Event, notification)
/// and waits out `--eviction-notice`. `None`: the pod is deleted now.
async fn eviction_turn(
    ctx: &Context,
    ws: &Workspace,
    pods: &Api<Pod>,
    pod: &Pod,
    now: Timestamp,
) -> Result<Option<Pass>, Error> {
    let Some(record) = eviction::stopping(ws, pod) else {
        return Ok(None);
    };
    let notice = match eviction::notice_step(ws, pod, &record, now, ctx.settings.eviction_notice) {
        eviction::NoticeStep::Stop => return Ok(None),
        eviction::NoticeStep::Wait(at) => {
            let wait = at.duration_since(now).unsigned_abs();
            return Ok(Some(Pass::Done(Requeue::requeue(
                wait.max(Duration::from_millis(100)),
            ))));
        }
        eviction::NoticeStep::Give(notice) => notice,
    };
    // A pod told of its stop holds its slots from here on, until lifeguard releases it.
    let mut told = ctx.eviction_gate.lock().await;
    told.retain(|_, at| now.duration_since(*at) < TOLD_HORIZON);
    // The pod itself never counts against its own notice (an unreadable notice on it is
    // given again).
    let own = (pod.namespace().unwrap_or_default(), pod.name_any());
    let mut cached = ctx.pods.evicting().unwrap_or_default();
    cached.retain(|key| *key != own);
    told.remove(&own);
    let in_cluster = eviction::cluster_in_flight(&cached, &told, now, TOLD_HORIZON);
    let held = if !eviction::cluster_budget_allows(in_cluster, ctx.settings.eviction_max_concurrent)
    {
        Some("cluster")
    } else if !eviction_slot_free(ctx, pod).await? {
        Some("node")
    } else {
        None
    };
    if let Some(budget) = held {
        ctx.metrics
            .eviction_stops_held
            .with_label_values(&[budget])
            .inc();
        return Ok(Some(Pass::Done(Requeue::requeue(EVICTION_BUDGET_RECHECK))));
    }
    let patch = eviction::notice_patch(&notice, pod.metadata.uid.as_deref());
    match pods
        .patch(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => {}
        // Gone already: the next pass records the eviction as done.
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    told.insert(own, now);
    drop(told);
    ctx.metrics
        .eviction_notices
        .with_label_values::<&str>(&[])
        .inc();
    ctx.notify
        .send(crate::notify::document::eviction_stop(ws, &notice, now));
    ctx.event(
        ws,
        EventType::Normal,
        eviction::REASON_EVICTION_NOTICE,
        notice.message.clone(),
    )
    .await;
    if notice.stop_at.0 > now {
        let wait = notice.stop_at.0.duration_since(now).unsigned_abs();
        return Ok(Some(Pass::Done(Requeue::requeue(wait))));
    }
    Ok(None)
}

/// Whether the node of evicted `pod` has a free eviction slot (`--eviction-max-per-node`),
/// by a fresh list of the workspace pods on that node: the pod watch keeps no node names.
async fn eviction_slot_free(ctx: &Context, pod: &Pod) -> Result<bool, Error> {
    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
        return Ok(true);
    };
    let all: Api<Pod> = Api::all(ctx.client.clone());
    let params = kube::api::ListParams::default()
        .labels(lifeguard_api::names::WORKSPACE_LABEL)
        .fields(&format!("spec.nodeName={node}"));
    let mut on_node = all.list(&params).await?.items;
    on_node.retain(|p| p.metadata.uid != pod.metadata.uid);
    Ok(eviction::budget_allows(
        &on_node,
        ctx.settings.eviction_max_per_node,
    ))
}

async fn create_pod(
    ctx: &Context,
    ws: &Workspace,
    workspaces: &Api<Workspace>,
    pods: &Api<Pod>,
    start: u32,
    recreation: Option<u32>,
) -> Result<Pass, Error> {
    let mut pod = podspec::build(ws, start, recreation);
    crate::grace::cap_grace_period(&mut pod, ctx.settings.max_grace_period);
    if disposal::confirmation_applies(ws, &ctx.settings) {
        pod.annotations_mut().insert(
            lifeguard_api::names::DISPOSAL_CONFIRMATION_ANNOTATION.into(),
            lifeguard_api::disposal::CONFIRMATION_REQUIRED.into(),
        );
    }
    if let Some(node) = podspec::node_to_avoid(ws, recreation, ctx.settings.avoid_refusing_node) {
        podspec::avoid_node(&mut pod, &node);
    }
    let created = match pods.create(&PostParams::default(), &pod).await {
        Ok(created) => created,
        // Already there (our earlier create whose status write was lost, or a stranger's
        // pod of that name): read it and plan with it.
        Err(kube::Error::Api(s)) if s.code == 409 => return Ok(Pass::PodExists),
        // Refused (a quota, a maintenance window or another admission webhook, an invalid
        // spec): recorded where the user looks, retried with backoff, never using up one of
        // the rejection retries.
        Err(kube::Error::Api(s)) => {
            let refusal = CreateRefusal {
                code: s.code,
                reason: s.reason.clone(),
                message: s.message.clone(),
            };
            return refused(ctx, ws, workspaces, &refusal).await.map(Pass::Done);
        }
        Err(e) => return Err(e.into()),
    };
    let tolerated = podspec::tolerated_lifeguard_taints(&created);
    if !tolerated.is_empty() {
        for taint in &tolerated {
            ctx.metrics
                .taints_tolerated
                .with_label_values(&[*taint])
                .inc();
        }
        let note = format!(
            "the pod template tolerates {}: the pod may be scheduled onto a node lifeguard's prober found unhealthy or has not proven yet; remove the toleration unless that is wanted",
            tolerated.join(" and ")
        );
        ctx.event(ws, EventType::Warning, "TaintsTolerated", note)
            .await;
    }
    if let Some(version) = &created.metadata.resource_version {
        let namespace = ws.namespace().unwrap_or_default();
        let known = Known::Written(version.clone());
        ctx.pods.known(&namespace, &created.name_any(), known);
    }
    let status = created_status(
        ws,
        &created,
        start,
        recreation,
        Timestamp::now(),
        &ctx.settings,
    );
    if let Some(attempt) = recreation {
        ctx.metrics
            .recreations
            .with_label_values(&[&attempt.to_string()])
            .inc();
        let note = format!(
            "re-creating pod {} (attempt {attempt} of {})",
            pod_name(&ws.name_any()),
            ctx.settings.max_retries
        );
        ctx.event(ws, EventType::Normal, "Recreating", note).await;
    } else {
        let note = format!("created pod {}", pod_name(&ws.name_any()));
        ctx.event(ws, EventType::Normal, "PodCreated", note).await;
    }
    let stored = write_status(ctx, workspaces, ws, None, &status).await?;
    Ok(Pass::Created(Box::new((stored, created))))
}

/// Records a refused create (status first, so a controller restarted in between does not
/// announce it again), publishes an Event if it is a new refusal, and waits out the backoff.
async fn refused(
    ctx: &Context,
    ws: &Workspace,
    workspaces: &Api<Workspace>,
    refusal: &CreateRefusal,
) -> Result<Requeue, Error> {
    let now = Timestamp::now();
    let (status, new) = record_create_refusal(ws, refusal, now);
    write_status(ctx, workspaces, ws, None, &status).await?;
    let pod = pod_name(&ws.name_any());
    tracing::info!(workspace = %ws.name_any(), code = refusal.code, message = %refusal.message, new, "pod creation refused");
    if new {
        if refusal.is_maintenance_denial() {
            ctx.event(
                ws,
                EventType::Normal,
                "MaintenanceDenied",
                refusal.message.clone(),
            )
            .await;
        } else {
            let note = format!(
                "cannot create pod {pod} ({} {}): {}; retrying with backoff",
                refusal.code, refusal.reason, refusal.message
            );
            ctx.event(ws, EventType::Warning, "PodCreateFailed", note)
                .await;
        }
    }
    let retry = status
        .last_create_error
        .as_ref()
        .map_or(now, |r| create_retry_at(r, &ctx.settings));
    let wait = retry
        .duration_since(now)
        .unsigned_abs()
        .max(Duration::from_millis(100));
    Ok(Requeue::requeue(wait))
}

pub fn error_policy(
    ws: Arc<PartialObjectMeta<Workspace>>,
    error: &Error,
    ctx: Arc<Context>,
) -> Requeue {
    ctx.retry_after(error, "Workspace", &ws.name_any())
}
