//! "What is the next action for this workspace?" as a pure function of the Workspace, its
//! pod (if any) and the time. The reconciler performs exactly one action per call and is
//! called again by the resulting watch event, so a controller killed between any two
//! actions resumes from what is stored in the API without losing or duplicating a pod.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kube::ResourceExt;
use lifeguard_api::names::{DRAINED_BY_ANNOTATION, POD_FINALIZER, WORKSPACE_FINALIZER};
use lifeguard_api::rejection::RejectionClass;
use lifeguard_api::workspace::{PodCreateError, PodRejection, condition};
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

use crate::backoff;
use crate::rejection::{Rejection, rejected_after_running, rejection};
use crate::status::{
    clear_create_refusal, condition_is_true, from_pod, set_condition, set_failed,
    set_not_ready_because,
};
use crate::workspace::namespace_policy::{REASON_NAMESPACE_REFUSED, refused_status};
use crate::workspace::service_account_policy::REASON_SERVICE_ACCOUNT_REFUSED;
use crate::workspace::start::{self, StartStep};
use crate::workspace::steering;
use crate::workspace::stuck_terminating;

pub use crate::settings::Settings;
pub use crate::workspace::action::Action;

/// The `drain: true` window that asked this workspace to stop, if one did.
fn drained_by(ws: &Workspace) -> Option<&str> {
    ws.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DRAINED_BY_ANNOTATION))
        .map(String::as_str)
}

pub(crate) fn has_finalizer(finalizers: Option<&Vec<String>>, name: &str) -> bool {
    finalizers.is_some_and(|f| f.iter().any(|x| x == name))
}

/// What the reconciler read besides the Workspace and its pod.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// (reason, message) of the pod's latest FailedMount or FailedAttachVolume Event, read
    /// only while the kubelet is still creating its containers.
    pub mount_event: Option<(String, String)>,
    /// The backup agent's answer by `DisposalReceipt`, read only while the pod's disposal
    /// waits for one (`crate::disposal::awaiting_answer`), and only if it is this pod's.
    pub receipt: Option<lifeguard_api::disposal::DisposalResult>,
    /// The enforcing node-scoped windows that cover the workspace, read only while its pod
    /// is unscheduled (`steering`).
    pub steering: Vec<lifeguard_api::window::CompiledWindow>,
}

pub fn plan(ws: &Workspace, pod: Option<&Pod>, now: Timestamp, settings: &Settings) -> Action {
    plan_observed(ws, pod, &Observed::default(), now, settings)
}

pub fn plan_observed(
    ws: &Workspace,
    pod: Option<&Pod>,
    observed: &Observed,
    now: Timestamp,
    settings: &Settings,
) -> Action {
    let deleting = ws.metadata.deletion_timestamp.is_some();
    if !deleting && !has_finalizer(ws.metadata.finalizers.as_ref(), WORKSPACE_FINALIZER) {
        return Action::AddWorkspaceFinalizer;
    }
    let action = match pod {
        Some(pod) if controlled_by(pod, ws) => {
            let action = plan_with_pod(ws, pod, observed, now, settings);
            stuck_terminating::check(pod, action, now, settings)
        }
        Some(pod) => plan_with_foreign_pod(ws, pod, now, settings),
        None => plan_without_pod(ws, now, settings),
    };
    // One gate before every pod creation, first starts and replacements alike.
    if let Action::CreatePod { .. } = action {
        let refused = settings
            .namespaces
            .refusal(&ws.namespace().unwrap_or_default())
            .map(|m| (REASON_NAMESPACE_REFUSED, m))
            .or_else(|| {
                settings
                    .service_accounts
                    .refusal(ws)
                    .map(|m| (REASON_SERVICE_ACCOUNT_REFUSED, m))
            });
        if let Some((reason, message)) = refused {
            return Action::Refuse(Box::new(refused_status(ws, reason, &message, now)));
        }
    }
    action
}

/// Whether `pod`'s controlling owner reference names this very Workspace (by UID): a pod
/// of the same name may be a stranger's, or left by a deleted Workspace of the same name.
pub fn controlled_by(pod: &Pod, ws: &Workspace) -> bool {
    let Some(uid) = ws.metadata.uid.as_deref() else {
        return false;
    };
    pod.metadata.owner_references.as_ref().is_some_and(|refs| {
        refs.iter()
            .any(|r| r.controller == Some(true) && r.uid == uid)
    })
}

/// How often a workspace whose pod name is taken looks again: the other pod's deletion
/// does not trigger this Workspace's reconcile (it is not the pod's owner).
const CONFLICT_RECHECK: SignedDuration = SignedDuration::from_secs(30);

/// A pod of our name that this Workspace does not control is never touched: for this
/// workspace it is as if it had no pod, except that a new one cannot be created while the
/// name is taken. Then the Workspace waits, `Pending`, with `PodConflict` naming the pod.
fn plan_with_foreign_pod(ws: &Workspace, pod: &Pod, now: Timestamp, settings: &Settings) -> Action {
    match plan_without_pod(ws, now, settings) {
        Action::CreatePod { .. } => {}
        other => return other,
    }
    let status = ws.status.clone().unwrap_or_default();
    let generation = ws.metadata.generation;
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let owner = pod
        .metadata
        .owner_references
        .as_ref()
        .and_then(|refs| refs.iter().find(|r| r.controller == Some(true)))
        .map_or("no controlling owner".to_string(), |r| {
            format!("it is controlled by {} {} (uid {})", r.kind, r.name, r.uid)
        });
    let message = format!(
        "pod {name} exists but this Workspace does not control it ({owner}); it is left \
         alone, and this workspace's pod is created once the name is free"
    );
    let mut next = status.clone();
    next.phase = Some(WorkspacePhase::Pending);
    set_not_ready_because(
        &mut next.conditions,
        condition::POD_CONFLICT,
        "PodNameTaken",
        "PodNameTaken",
        &message,
        generation,
        now,
    );
    if next != status {
        return Action::UpdateStatus(Box::new(next));
    }
    Action::WaitUntil(now.checked_add(CONFLICT_RECHECK).unwrap_or(now))
}

fn plan_without_pod(ws: &Workspace, now: Timestamp, settings: &Settings) -> Action {
    let status = ws.status.clone().unwrap_or_default();
    let generation = ws.metadata.generation;
    if ws.metadata.deletion_timestamp.is_some() {
        return if has_finalizer(ws.metadata.finalizers.as_ref(), WORKSPACE_FINALIZER) {
            Action::RemoveWorkspaceFinalizer
        } else {
            Action::Idle
        };
    }
    // A window with resumeAfter restarts what it drained: first the status says so (and
    // records the request, so it acts once), then the pod is created as for a first start.
    if let Some(request) = lifeguard_api::resume::pending_request(ws) {
        let mut next = status.clone();
        next.phase = Some(WorkspacePhase::Pending);
        next.resumed = Some(request.to_string());
        next.pod_deletion_time = None;
        next.next_attempt_time = None;
        let window = lifeguard_api::resume::parse_request(request).map_or("", |(w, _)| w);
        set_condition(
            &mut next.conditions,
            condition::READY,
            false,
            lifeguard_api::resume::REASON_RESUMING,
            &format!("maintenance window {window} is over; the workspace starts again"),
            generation,
            now,
        );
        return Action::UpdateStatus(Box::new(next));
    }
    if let Some((next, note)) = crate::workspace::eviction::after_pod_gone(ws, now) {
        return Action::RecordEviction {
            status: Box::new(next),
            note,
        };
    }
    if matches!(
        status.phase,
        Some(WorkspacePhase::Failed | WorkspacePhase::Stopped)
    ) {
        return Action::Idle;
    }

    // Drained without a pod (never started, or between a rejection and its replacement):
    // stopped at once, so the drain can finish, and never started afterwards.
    if let Some(window) = drained_by(ws) {
        let mut next = status.clone();
        next.phase = Some(WorkspacePhase::Stopped);
        next.pod_deletion_time = None;
        set_condition(
            &mut next.conditions,
            condition::READY,
            false,
            "Drained",
            &format!("maintenance window {window} drained the workspace before its pod ran"),
            generation,
            now,
        );
        return Action::UpdateStatus(Box::new(next));
    }
    if condition_is_true(&status, condition::POD_REJECTED) {
        let Some(gone_at) = status.pod_deletion_time.as_ref().map(|t| t.0) else {
            let mut next = status.clone();
            // Whole seconds, as the API stores it, so the due time below is the one a
            // restarted controller would compute from the stored value.
            let gone_at = Timestamp::from_second(now.as_second()).unwrap_or(now);
            next.pod_deletion_time = Some(Time(gone_at));
            if status.pod_recreated < settings.max_retries {
                next.next_attempt_time = Some(MicroTime(replacement_due(ws, gone_at, settings)));
            }
            return Action::UpdateStatus(Box::new(next));
        };
        if status.pod_recreated >= settings.max_retries {
            let mut next = status.clone();
            next.phase = Some(WorkspacePhase::Failed);
            next.next_attempt_time = None;
            let reason = status
                .last_rejection
                .as_ref()
                .map_or("unknown", |r| r.reason.as_str());
            let message = format!(
                "the kubelet rejected the pod {} times (last reason: {reason}); giving up after {} re-creations",
                status.pod_recreated + 1,
                settings.max_retries
            );
            set_failed(
                &mut next.conditions,
                "RetriesExhausted",
                &message,
                generation,
                now,
            );
            return Action::GiveUp(Box::new(next));
        }
        // Stored by this or an earlier run; computed for a status written before it was.
        let due = match &status.next_attempt_time {
            Some(t) => t.0,
            None => replacement_due(ws, gone_at, settings),
        };
        if now < due {
            return Action::WaitUntil(due);
        }
        return create_when_due(
            &status,
            now,
            settings,
            Action::CreatePod {
                start: status.pod_starts + 1,
                recreation: Some(status.pod_recreated + 1),
            },
        );
    }
    // Pending without a pod after starts before: a resumed, evicted or re-steered workspace
    // whose new pod is not created yet, or was refused (retried with the same backoff as a
    // first start).
    let resuming = status.phase == Some(WorkspacePhase::Pending) && status.resumed.is_some()
        || crate::workspace::eviction::restarting(&status)
        || steering::resteering(&status);
    if status.pod_starts == 0 || resuming {
        return create_when_due(
            &status,
            now,
            settings,
            Action::CreatePod {
                start: status.pod_starts + 1,
                recreation: None,
            },
        );
    }
    // The pod went away without a rejection (deleted by someone else): the workspace has
    // stopped, or failed if its pod had failed on its own; it is not silently restarted.
    let mut next = status.clone();
    next.phase = Some(if condition_is_true(&status, condition::FAILED) {
        WorkspacePhase::Failed
    } else {
        WorkspacePhase::Stopped
    });
    set_condition(
        &mut next.conditions,
        condition::READY,
        false,
        "PodGone",
        "the workspace pod was deleted",
        generation,
        now,
    );
    if next != status {
        Action::UpdateStatus(Box::new(next))
    } else {
        Action::Idle
    }
}

/// `create`, unless the API refused the last attempt and its backoff is not over.
fn create_when_due(
    status: &WorkspaceStatus,
    now: Timestamp,
    settings: &Settings,
    create: Action,
) -> Action {
    match &status.last_create_error {
        Some(refused) if now < create_retry_at(refused, settings) => {
            Action::WaitUntil(create_retry_at(refused, settings))
        }
        _ => create,
    }
}

/// When to try creating the pod again after `refused`: `create_backoff` after the first
/// refusal, doubling with each refusal in a row, never more than `create_backoff_max`.
pub fn create_retry_at(refused: &PodCreateError, settings: &Settings) -> Timestamp {
    let doublings = refused.attempts.saturating_sub(1).min(30);
    let wait = settings
        .create_backoff
        .checked_mul(1i32 << doublings)
        .unwrap_or(settings.create_backoff_max)
        .min(settings.create_backoff_max);
    refused.time.0.checked_add(wait).unwrap_or(refused.time.0)
}

/// The API's answer to a pod create it refused.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRefusal {
    pub code: u16,
    pub reason: String,
    pub message: String,
}

impl CreateRefusal {
    /// A maintenance window's admission denial: expected, and over when the window ends.
    pub fn is_maintenance_denial(&self) -> bool {
        self.code == 403 && self.message.contains("maintenance window")
    }
}

/// The status after the API refused to create the pod: `Pending`, `PodCreateFailed` and
/// `Ready=False` carrying the API's message, and the refusal recorded for the backoff.
/// The flag says whether this refusal differs from the one recorded before; only then is
/// an Event published, so a refusal repeated on every retry (or after a controller
/// restart, which reads the same status) is announced once.
pub fn record_create_refusal(
    ws: &Workspace,
    refusal: &CreateRefusal,
    now: Timestamp,
) -> (WorkspaceStatus, bool) {
    let mut next = ws.status.clone().unwrap_or_default();
    let generation = ws.metadata.generation;
    let previous = next.last_create_error.take();
    let same = previous.as_ref().is_some_and(|p| {
        p.code == refusal.code && p.reason == refusal.reason && p.message == refusal.message
    });
    let since = match &previous {
        Some(p) if same => p.since.clone(),
        _ => Time(now),
    };
    next.last_create_error = Some(PodCreateError {
        code: refusal.code,
        reason: refusal.reason.clone(),
        message: refusal.message.clone(),
        attempts: previous.map_or(0, |p| p.attempts).saturating_add(1),
        since,
        time: Time(now),
    });
    next.phase = Some(WorkspacePhase::Pending);
    let reason = if refusal.is_maintenance_denial() {
        "MaintenanceDenied"
    } else if refusal.reason.is_empty() {
        "CreateRefused"
    } else {
        refusal.reason.as_str()
    };
    for type_ in [condition::POD_CREATE_FAILED, condition::READY] {
        let failed = type_ == condition::POD_CREATE_FAILED;
        set_condition(
            &mut next.conditions,
            type_,
            failed,
            if failed { reason } else { "PodCreateFailed" },
            &refusal.message,
            generation,
            now,
        );
    }
    (next, !same)
}

fn pod_phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// Containers have all stopped, or the pod has been deleting for longer than allowed.
fn disposal_done(pod: &Pod, now: Timestamp, settings: &Settings) -> bool {
    let running = lifeguard_api::disposal::any_container_running(pod);
    let overdue = pod
        .metadata
        .deletion_timestamp
        .as_ref()
        .is_some_and(|t| now >= t.0.checked_add(settings.disposal_timeout).unwrap_or(t.0));
    !running || overdue
}

fn plan_with_pod(
    ws: &Workspace,
    pod: &Pod,
    observed: &Observed,
    now: Timestamp,
    settings: &Settings,
) -> Action {
    let status = ws.status.clone().unwrap_or_default();
    let generation = ws.metadata.generation;
    let ours = has_finalizer(pod.metadata.finalizers.as_ref(), POD_FINALIZER);
    let pod_deleting = pod.metadata.deletion_timestamp.is_some();

    if let Some(rejected) = rejection(pod, &settings.reasons) {
        let uid = pod.metadata.uid.clone();
        let recorded = condition_is_true(&status, condition::POD_REJECTED)
            && status
                .last_rejection
                .as_ref()
                .is_some_and(|r| r.pod_uid == uid);
        if !recorded {
            let mut next = status.clone();
            next.phase = Some(WorkspacePhase::Pending);
            next.pod_deletion_time = None;
            next.next_attempt_time = None;
            next.pod_starts = next
                .pod_starts
                .max(from_pod(ws, pod, WorkspacePhase::Pending, now).pod_starts);
            next.pod_recreated = next
                .pod_recreated
                .max(from_pod(ws, pod, WorkspacePhase::Pending, now).pod_recreated);
            let message = format!(
                "kubelet on {} rejected the pod: {}",
                rejected.node, rejected.reason
            );
            set_not_ready_because(
                &mut next.conditions,
                condition::POD_REJECTED,
                &rejected.reason,
                "PodRejected",
                &message,
                generation,
                now,
            );
            let class = rejected.class;
            if class == RejectionClass::Permanent {
                fail_permanently(&mut next, &rejected, generation, now);
            }
            next.last_rejection = Some(record(uid, rejected, Some(class), now));
            return Action::RecordRejection(Box::new(next));
        }
        // Nothing ran in a rejected pod: no disposal to wait for.
        if ours {
            return Action::ReleasePod;
        }
        if !pod_deleting {
            return Action::DeletePod {
                grace_seconds: Some(0),
                cause: REJECTED_CAUSE.into(),
            };
        }
        return Action::Idle;
    }

    // A pod given up on for its start (`start`) goes: gracefully, since a container may
    // run, and it never was Ready, so there is no work to wait for.
    if start::given_up(&status, pod) {
        if !pod_deleting {
            let why = status
                .last_rejection
                .as_ref()
                .map_or(String::new(), |r| r.message.clone());
            return Action::DeletePod {
                grace_seconds: crate::grace::delete_grace_seconds(pod, settings.max_grace_period),
                cause: format!("its start failed: {why}"),
            };
        }
        if ours && disposal_done(pod, now, settings) {
            return Action::ReleasePod;
        }
        return match &pod.metadata.deletion_timestamp {
            Some(deleted) if ours => Action::WaitUntil(
                deleted
                    .0
                    .checked_add(settings.disposal_timeout)
                    .unwrap_or(now),
            ),
            _ => Action::Idle,
        };
    }

    let evicted = crate::workspace::eviction::stopping(ws, pod);
    let ws_deleting =
        ws.metadata.deletion_timestamp.is_some() || drained_by(ws).is_some() || evicted.is_some();
    if !ws_deleting && let Some(action) = steering::step(ws, pod, &observed.steering, ours, now) {
        return action;
    }
    let phase = pod_phase(pod);
    let terminal = matches!(phase, "Succeeded" | "Failed");
    if ws_deleting || pod_deleting || terminal {
        let mut next = from_pod(ws, pod, WorkspacePhase::Stopping, now);
        if let Some(refused) = rejected_after_running(pod, &settings.reasons) {
            let uid = pod.metadata.uid.clone();
            if status.last_rejection.as_ref().map(|r| &r.pod_uid) != Some(&uid) {
                let message = format!(
                    "the kubelet on {} refused the pod after it had run ({}): {}; it is not re-created",
                    refused.node, refused.reason, refused.message
                );
                set_condition(
                    &mut next.conditions,
                    condition::FAILED,
                    true,
                    REJECTED_AFTER_RUNNING,
                    &message,
                    generation,
                    now,
                );
                next.last_rejection = Some(record(uid, refused, None, now));
                next.phase = Some(shown_phase(
                    &next,
                    status.phase,
                    ours,
                    false,
                    pod_deleting,
                    terminal,
                ));
                return Action::RecordRejectedAfterRunning(Box::new(next));
            }
        }
        // A pod that failed on its own, before anyone asked it to stop, fails its workspace
        // (recorded now, while the pod still says so; the phase follows at release). A pod
        // stopped on request ends Stopped whatever its phase: since 1.27 the kubelet gives
        // every deleted pod a terminal phase, Failed when a container exits non-zero.
        if phase == "Failed" && !pod_deleting && !ws_deleting {
            let message = match pod.status.as_ref().and_then(|s| s.message.as_deref()) {
                Some(why) if !why.is_empty() => format!("the workspace pod failed: {why}"),
                _ => "the workspace pod failed before it was asked to stop".to_string(),
            };
            if !condition_is_true(&next, condition::FAILED) {
                set_condition(
                    &mut next.conditions,
                    condition::FAILED,
                    true,
                    POD_FAILED,
                    &message,
                    generation,
                    now,
                );
            }
        }
        let release = (ours && pod_deleting && disposal_done(pod, now, settings))
            .then(|| crate::disposal::release(ws, pod, observed.receipt.clone(), now, settings));
        let releasing = release == Some(Action::ReleasePod);
        next.phase = Some(shown_phase(
            &next,
            status.phase,
            ours,
            releasing,
            pod_deleting,
            terminal,
        ));
        if Some(&next) != ws.status.as_ref() {
            return Action::UpdateStatus(Box::new(next));
        }
        if !pod_deleting {
            return Action::DeletePod {
                grace_seconds: crate::grace::delete_grace_seconds(pod, settings.max_grace_period),
                cause: match &evicted {
                    Some(record) if drained_by(ws).is_none() => {
                        crate::workspace::eviction::stop_cause(record)
                    }
                    _ => stop_cause(ws, phase),
                },
            };
        }
        if let Some(release) = release {
            return release;
        }
        if ours && let Some(deleted) = &pod.metadata.deletion_timestamp {
            return Action::WaitUntil(
                deleted
                    .0
                    .checked_add(settings.disposal_timeout)
                    .unwrap_or(now),
            );
        }
        return Action::Idle;
    }

    let live_phase = if phase == "Running" {
        WorkspacePhase::Running
    } else {
        WorkspacePhase::Creating
    };
    let next = from_pod(ws, pod, live_phase, now);
    let mount_event = observed
        .mount_event
        .as_ref()
        .map(|(r, m)| (r.as_str(), m.as_str()));
    match start::step(ws, pod, next, mount_event, now, settings) {
        StartStep::GiveUp {
            status,
            blocker,
            class,
            ..
        } => Action::RecordStartFailure {
            status: Box::new(status),
            blocker,
            class,
        },
        StartStep::Going { status, .. } if Some(&status) != ws.status.as_ref() => {
            Action::UpdateStatus(Box::new(status))
        }
        StartStep::Going { recheck, .. } => {
            let steer_look = steering::next_look(pod, &observed.steering, now);
            match recheck.into_iter().chain(steer_look).min() {
                Some(at) => Action::WaitUntil(at),
                None => Action::Idle,
            }
        }
    }
}

/// The status to record once the pod (start `start`, re-creation `recreation`) is
/// created, as the create returned it: this attempt counted, a refusal or rejection wait
/// cleared, and what planning with that pod derives from it (its Ready and Starting
/// conditions), so
/// that the pass that plans with it next has nothing to write.
pub fn created_status(
    ws: &Workspace,
    created: &Pod,
    start: u32,
    recreation: Option<u32>,
    now: Timestamp,
    settings: &Settings,
) -> WorkspaceStatus {
    let mut status = ws.status.clone().unwrap_or_default();
    clear_create_refusal(&mut status, ws.metadata.generation, now);
    status.phase = Some(WorkspacePhase::Creating);
    status.pod_name = created.metadata.name.clone();
    status.observed_generation = ws.metadata.generation;
    status.pod_starts = status.pod_starts.max(start);
    status.pod_deletion_time = None;
    status.next_attempt_time = None;
    // The disposal outcome on record is the previous pod's; this pod's own stop must wait
    // for its own answer (`disposal::awaiting_answer`).
    status
        .conditions
        .retain(|c| c.type_ != condition::DISPOSAL_CONFIRMED);
    if let Some(attempt) = recreation {
        status.pod_recreated = status.pod_recreated.max(attempt);
    }
    let mut recorded = ws.clone();
    recorded.status = Some(status);
    let next = from_pod(&recorded, created, WorkspacePhase::Creating, now);
    // The start's deadline (its `Starting` condition) too; a pod just created cannot have
    // run out of it.
    match start::step(&recorded, created, next.clone(), None, now, settings) {
        StartStep::Going { status, .. } => status,
        StartStep::GiveUp { .. } => next,
    }
}

/// Condition reason and Event reason for a pod the kubelet refused after it had run.
pub const REJECTED_AFTER_RUNNING: &str = "RejectedAfterRunning";

/// `Failed` condition reason for a pod that failed before anyone asked it to stop.
pub const POD_FAILED: &str = "PodFailed";

/// The phase a stopping workspace shows (`next` is its status as the pod shows it). A pod
/// lifeguard's finalizer holds is still being stopped, whatever its own phase, until its
/// release is due (disposal done, its outcome recorded): only then is the final phase
/// written, just before the release, so a drain's budget, `Drained` and the node label
/// never count a pod still being saved as gone. The final phase is `Failed` when the pod
/// failed on its own or was refused after it ran (the `Failed` condition says so), else
/// `Stopped`. A pod not held shows its final phase once it has ended, and keeps the one
/// recorded at its release while it is still Terminating.
fn shown_phase(
    next: &WorkspaceStatus,
    recorded: Option<WorkspacePhase>,
    ours: bool,
    releasing: bool,
    pod_deleting: bool,
    terminal: bool,
) -> WorkspacePhase {
    let final_phase = if condition_is_true(next, condition::FAILED) {
        WorkspacePhase::Failed
    } else {
        WorkspacePhase::Stopped
    };
    let released = pod_deleting && lifeguard_api::drain::is_done_phase(recorded);
    match (ours, releasing) {
        (true, true) => final_phase,
        (true, false) => WorkspacePhase::Stopping,
        (false, _) if terminal || released => final_phase,
        (false, _) => WorkspacePhase::Stopping,
    }
}

/// When the replacement of a pod confirmed gone at `gone_at` is due.
fn replacement_due(ws: &Workspace, gone_at: Timestamp, settings: &Settings) -> Timestamp {
    let status = ws.status.as_ref();
    let attempt = status.map_or(0, |s| s.pod_recreated) + 1;
    // The UID tells apart same-named workspaces; without one (never from the API) the
    // namespaced name still gives each workspace its own jitter.
    let seed = ws
        .metadata
        .uid
        .clone()
        .unwrap_or_else(|| format!("{}/{}", ws.namespace().unwrap_or_default(), ws.name_any()));
    let wait = backoff::delay(settings.backoff, settings.backoff_max, &seed, attempt);
    gone_at.checked_add(wait).unwrap_or(gone_at)
}

fn record(
    pod_uid: Option<String>,
    r: Rejection,
    class: Option<RejectionClass>,
    now: Timestamp,
) -> PodRejection {
    PodRejection {
        pod_uid,
        reason: r.reason,
        message: r.message,
        node: r.node,
        time: Time(now),
        class,
    }
}

/// A permanent rejection: no retry can help, so the workspace fails now, saying why in
/// the kubelet's own words.
fn fail_permanently(
    next: &mut WorkspaceStatus,
    r: &Rejection,
    generation: Option<i64>,
    now: Timestamp,
) {
    next.phase = Some(WorkspacePhase::Failed);
    let message = format!(
        "the kubelet on {} refused the pod for a reason re-creating cannot fix ({}): {}",
        r.node, r.reason, r.message
    );
    set_failed(&mut next.conditions, &r.reason, &message, generation, now);
}

const REJECTED_CAUSE: &str =
    "the kubelet rejected it; nothing ran, so it goes without a grace period";

/// Why a pod that was not rejected is stopped: its Workspace is deleted or drained, or
/// the pod has ended (the only other way `plan_with_pod` gets to a graceful delete).
pub(crate) fn stop_cause(ws: &Workspace, phase: &str) -> String {
    if ws.metadata.deletion_timestamp.is_some() {
        return "the Workspace is being deleted".into();
    }
    match drained_by(ws) {
        Some(window) => format!("maintenance window {window} drains it"),
        None => format!("it ended ({phase})"),
    }
}

#[cfg(test)]
#[path = "plan_create_tests.rs"]
mod plan_create_tests;
#[cfg(test)]
#[path = "plan_owner_tests.rs"]
mod plan_owner_tests;
#[cfg(test)]
#[path = "plan_tests.rs"]
pub(crate) mod plan_tests;

#[cfg(test)]
#[path = "plan_resume_tests.rs"]
mod plan_resume_tests;
#[cfg(test)]
#[path = "plan_stop_tests.rs"]
mod plan_stop_tests;
