//! "Is this start stuck, and what now?" Pure: the Workspace, its live pod, the status
//! `from_pod` built, what the pod's mount Events say, and the time in; the `Starting`
//! condition and the start deadline's verdict out.
//!
//! A pod has `spec.startTimeout` (else the controller's `--start-timeout`) from its
//! creation to be Ready. Until then the `Starting` condition names what holds it
//! (`lifeguard_api::start_blocker`). A permanent blocker fails the workspace at once; at the
//! deadline a node-side blocker (re-create class) replaces the pod, preferring another node,
//! while re-creations remain; anything else fails the workspace with the pod's own words.
//! A given-up pod is recorded in `lastRejection` (its UID, the reason `StartTimeout` or the
//! permanent blocker's), which is what `plan` reads to delete it, and for a re-creation,
//! the node to avoid.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use lifeguard_api::rejection::RejectionClass;
use lifeguard_api::start_blocker::{self, BlockerClass, StartBlocker};
use lifeguard_api::workspace::{PodRejection, condition};
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

use crate::settings::Settings;
use crate::status::{set_condition, set_failed, set_not_ready_because};

/// Reason of a start that passed its deadline (condition, `lastRejection`, Event).
pub const REASON_START_TIMEOUT: &str = "StartTimeout";
/// Reason of the `Starting` condition once the pod is Ready.
pub const REASON_STARTED: &str = "Started";
/// Reason of the `Starting` condition while nothing holds the pod.
pub const REASON_POD_STARTING: &str = "PodStarting";
/// Reason of the `Starting` condition after the start failed.
pub const REASON_START_FAILED: &str = "StartFailed";

/// `lastRejection.node` of a pod given up on before it was bound to a node.
pub const NOT_SCHEDULED: &str = "not-scheduled";

/// What the start deadline says about a live pod that is not being deleted.
#[derive(Debug, Clone, PartialEq)]
pub enum StartStep {
    /// The start goes on (or is over): write `status` if it changed; look again at
    /// `recheck` even if nothing else happens.
    Going {
        status: WorkspaceStatus,
        recheck: Option<Timestamp>,
    },
    /// Give up on this pod: the workspace fails, or (`recreate`) the pod is replaced.
    GiveUp {
        status: WorkspaceStatus,
        recreate: bool,
        /// The blocker's kind (`PodStarting` when none was seen) and the verdict's class,
        /// for the `lifeguard_controller_start_failures_total` labels.
        blocker: &'static str,
        class: &'static str,
    },
}

/// The start deadline of this workspace's pods.
pub fn start_timeout(ws: &Workspace, settings: &Settings) -> SignedDuration {
    // The webhook refuses an invalid value; one stored before it did gets the default.
    lifeguard_api::validation::start_timeout(&ws.spec)
        .ok()
        .flatten()
        .unwrap_or(settings.start_timeout)
}

fn created(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// Whether this pod has been Ready once (its start is over).
pub fn started(status: &WorkspaceStatus, pod: &Pod) -> bool {
    match (&status.pod_ready_time, created(pod)) {
        (Some(ready), Some(created)) => ready.0 >= created,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Whether `plan` gave up on this very pod for its start: it is to be deleted, not run.
pub fn given_up(status: &WorkspaceStatus, pod: &Pod) -> bool {
    status.last_rejection.as_ref().is_some_and(|r| {
        r.pod_uid.is_some() && r.pod_uid == pod.metadata.uid && is_start_failure_reason(&r.reason)
    })
}

/// `lastRejection` reasons that are the start deadline's, not a kubelet's.
pub fn is_start_failure_reason(reason: &str) -> bool {
    reason == REASON_START_TIMEOUT || start_blocker::CATALOGUE.iter().any(|k| k.reason == reason)
}

/// `next` is what `from_pod` built for the live pod; `mount_event` the latest FailedMount
/// or FailedAttachVolume Event's (reason, message), when the caller read it.
pub fn step(
    ws: &Workspace,
    pod: &Pod,
    mut next: WorkspaceStatus,
    mount_event: Option<(&str, &str)>,
    now: Timestamp,
    settings: &Settings,
) -> StartStep {
    let generation = ws.metadata.generation;
    if started(&next, pod) {
        set_condition(
            &mut next.conditions,
            condition::STARTING,
            false,
            REASON_STARTED,
            "the workspace pod is ready",
            generation,
            now,
        );
        return StartStep::Going {
            status: next,
            recheck: None,
        };
    }
    let timeout = start_timeout(ws, settings);
    // Every pod from the API has a creation time; without one there is no deadline.
    let deadline = created(pod).and_then(|c| c.checked_add(timeout).ok());
    let past_deadline = deadline.is_some_and(|d| now >= d);
    let blocker = start_blocker::blocker(pod, mount_event);
    let retries_left = next.pod_recreated < settings.max_retries;
    match &blocker {
        Some(b) if b.class == BlockerClass::Permanent => {
            return give_up(ws, pod, next, b, Cause::Permanent, now);
        }
        Some(b) if past_deadline => {
            let recreate = b.class == BlockerClass::Recreate && retries_left;
            return give_up(ws, pod, next, b, Cause::Deadline { timeout, recreate }, now);
        }
        None if past_deadline => {
            let waiting = StartBlocker {
                kind: start_blocker::BlockerKind::ContainerWaiting,
                reason: String::new(),
                class: BlockerClass::Wait,
                message: "the pod is not ready".into(),
            };
            let cause = Cause::Deadline {
                timeout,
                recreate: false,
            };
            return give_up(ws, pod, next, &waiting, cause, now);
        }
        _ => {}
    }
    let at = deadline.map_or("(no deadline)".to_string(), |d| {
        d.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    });
    let (reason, message) = match &blocker {
        None => (
            REASON_POD_STARTING,
            format!("the workspace pod is starting; it must be ready by {at}"),
        ),
        Some(b) => {
            let then = match b.class {
                BlockerClass::Recreate if retries_left => {
                    format!(
                        "the node is at fault: unless it clears, the pod is re-created on another node at {at}"
                    )
                }
                _ => {
                    format!("waiting for it to clear: unless it does, the workspace fails at {at}")
                }
            };
            (b.kind.as_str(), format!("{}; {then}", b.message))
        }
    };
    set_condition(
        &mut next.conditions,
        condition::STARTING,
        true,
        reason,
        &message,
        generation,
        now,
    );
    if blocker.is_some() {
        set_condition(
            &mut next.conditions,
            condition::READY,
            false,
            reason,
            &message,
            generation,
            now,
        );
    }
    // No earlier look for a pod creating its containers: a mount failure is told by an
    // Event, and the controller's watch of those triggers the reconcile (`mount_events`).
    StartStep::Going {
        status: next,
        recheck: deadline,
    }
}

/// Why a pod is given up on.
enum Cause {
    /// Its blocker is permanent: at once.
    Permanent,
    /// Its deadline passed; `recreate` when the node is at fault and retries remain.
    Deadline {
        timeout: SignedDuration,
        recreate: bool,
    },
}

fn give_up(
    ws: &Workspace,
    pod: &Pod,
    mut next: WorkspaceStatus,
    blocker: &StartBlocker,
    cause: Cause,
    now: Timestamp,
) -> StartStep {
    let generation = ws.metadata.generation;
    let recreate = matches!(cause, Cause::Deadline { recreate: true, .. });
    // No blocker seen (the pod runs but its readiness probe never passes, say).
    let name = if blocker.reason.is_empty() {
        REASON_POD_STARTING
    } else {
        blocker.kind.as_str()
    };
    // Never empty: with server-side apply, older API servers (1.20 among them) store an
    // empty required string as null and then refuse the whole status.
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| NOT_SCHEDULED.to_string());
    let (reason, message) = match cause {
        Cause::Deadline { timeout, .. } => (
            REASON_START_TIMEOUT,
            format!(
                "the workspace pod was not ready within {} ({}, {}: {})",
                timeout_text(ws, timeout),
                name,
                blocker.class.as_str(),
                blocker.message
            ),
        ),
        Cause::Permanent => (
            blocker.reason.as_str(),
            format!(
                "the workspace pod cannot start ({}, {}): {}",
                blocker.reason,
                blocker.class.as_str(),
                blocker.message
            ),
        ),
    };
    set_condition(
        &mut next.conditions,
        condition::STARTING,
        false,
        REASON_START_FAILED,
        &message,
        generation,
        now,
    );
    next.last_rejection = Some(PodRejection {
        pod_uid: pod.metadata.uid.clone(),
        reason: reason.to_string(),
        message: message.clone(),
        node,
        time: Time(now),
        class: Some(if recreate {
            RejectionClass::Transient
        } else {
            RejectionClass::Permanent
        }),
    });
    next.pod_deletion_time = None;
    next.next_attempt_time = None;
    if recreate {
        next.phase = Some(WorkspacePhase::Pending);
        let message = format!("{message}; re-creating it on another node");
        set_not_ready_because(
            &mut next.conditions,
            condition::POD_REJECTED,
            reason,
            "PodRejected",
            &message,
            generation,
            now,
        );
    } else {
        next.phase = Some(WorkspacePhase::Failed);
        set_failed(&mut next.conditions, reason, &message, generation, now);
    }
    let class = match (recreate, blocker.class) {
        (true, _) => BlockerClass::Recreate,
        (false, BlockerClass::Permanent) => BlockerClass::Permanent,
        (false, _) => BlockerClass::Wait,
    };
    StartStep::GiveUp {
        status: next,
        recreate,
        blocker: name,
        class: class.label(),
    }
}

/// "10m (spec.startTimeout)": the deadline and who set it, for the failure message.
fn timeout_text(ws: &Workspace, timeout: SignedDuration) -> String {
    let source = match ws.spec.start_timeout {
        Some(_) => "spec.startTimeout",
        None => "the controller's --start-timeout",
    };
    format!("{timeout:#} ({source})")
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod start_tests;
