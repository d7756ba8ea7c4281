//! Building the Workspace status the controller wants, idempotently: recomputing it from
//! the same objects gives the same value, so an unchanged status is never written.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use lifeguard_api::names::{GENERATION_ANNOTATION, RECREATION_ANNOTATION, START_ANNOTATION};
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

/// A condition that keeps the workspace from being ready: `type_=True` with `reason`, and
/// `Ready=False` with `ready_reason`, both saying `message`.
pub fn set_not_ready_because(
    conditions: &mut Vec<Condition>,
    type_: &str,
    reason: &str,
    ready_reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    set_condition(conditions, type_, true, reason, message, generation, now);
    set_condition(
        conditions,
        condition::READY,
        false,
        ready_reason,
        message,
        generation,
        now,
    );
}

/// A workspace that will not run again: `Failed=True` with `reason`, and `Ready=False`
/// (reason `Failed`), both saying `message`.
pub fn set_failed(
    conditions: &mut Vec<Condition>,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    set_not_ready_because(
        conditions,
        condition::FAILED,
        reason,
        "Failed",
        message,
        generation,
        now,
    );
}

/// Sets a condition; the transition time moves only when the status value changes.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = Time(now);
            }
            c.status = status.into();
            c.reason = reason.into();
            c.message = message.into();
            c.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: generation,
            last_transition_time: Time(now),
        }),
    }
}

pub fn condition_is_true(status: &WorkspaceStatus, type_: &str) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

fn annotation_number(pod: &Pod, key: &str) -> u32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The scheduler's message while it finds no node for the pod (`PodScheduled=False`,
/// reason `Unschedulable`).
fn unschedulable(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })
        .map(|c| c.message.clone().unwrap_or_default())
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A pod was created (or is found): forget the last refusal.
pub fn clear_create_refusal(status: &mut WorkspaceStatus, generation: Option<i64>, now: Timestamp) {
    status.last_create_error = None;
    if condition_is_true(status, condition::POD_CREATE_FAILED) {
        set_condition(
            &mut status.conditions,
            condition::POD_CREATE_FAILED,
            false,
            "Created",
            "the pod was created",
            generation,
            now,
        );
    }
}

/// The pod's `DisruptionTarget` condition, as (reason, message for the Workspace): set by
/// the API server for an eviction (`EvictionByEvictionAPI`), by the taint manager
/// (`DeletionByTaintManager`), the pod garbage collector (`DeletionByPodGC`), the kubelet
/// under node pressure (`TerminationByKubelet`) or the scheduler (`PreemptionByScheduler`)
/// when they stop a pod: why a stop lifeguard did not start happens.
fn disruption(pod: &Pod) -> Option<(String, String)> {
    let c = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")?;
    let reason = c
        .reason
        .clone()
        .unwrap_or_else(|| "DisruptionTarget".into());
    let message = match c.message.as_deref() {
        Some(m) if !m.is_empty() => format!("the workspace pod is being stopped ({reason}): {m}"),
        _ => format!("the workspace pod is being stopped ({reason})"),
    };
    Some((reason, message))
}

/// The status as the live pod shows it, with `phase` as given.
pub fn from_pod(
    ws: &Workspace,
    pod: &Pod,
    phase: WorkspacePhase,
    now: Timestamp,
) -> WorkspaceStatus {
    let mut status = ws.status.clone().unwrap_or_default();
    let generation = ws.metadata.generation;
    status.phase = Some(phase);
    status.pod_name = pod.metadata.name.clone();
    if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
        status.node_name = Some(node);
    }
    // The pod's own record wins over a status write that may have been lost.
    status.pod_starts = status
        .pod_starts
        .max(annotation_number(pod, START_ANNOTATION));
    status.pod_recreated = status
        .pod_recreated
        .max(annotation_number(pod, RECREATION_ANNOTATION));
    // Only what the pod was built from: a spec change is not applied to a running pod. A
    // pod from before the annotation existed keeps what was recorded.
    if let Some(built_from) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(GENERATION_ANNOTATION))
        .and_then(|v| v.parse().ok())
    {
        status.observed_generation = Some(built_from);
    }
    let ready = phase == WorkspacePhase::Running && pod_ready(pod);
    // The first time this pod is Ready ends its start (and its start deadline). Whole
    // seconds, as the API stores it, so recomputing from the stored status is a no-op.
    let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let ready_before = match (&status.pod_ready_time, created) {
        (Some(at), Some(created)) => at.0 >= created,
        (at, None) => at.is_some(),
        (None, _) => false,
    };
    if ready && !ready_before {
        status.pod_ready_time = Some(Time(Timestamp::from_second(now.as_second()).unwrap_or(now)));
    }
    let unschedulable =
        unschedulable(pod).map(|why| format!("the workspace pod fits on no node: {why}"));
    let disrupted = disruption(pod);
    let (reason, message) = match (phase, &unschedulable) {
        (WorkspacePhase::Running, _) if ready => ("PodReady", "the workspace pod is ready"),
        (WorkspacePhase::Running, _) => ("PodNotReady", "the workspace pod runs but is not ready"),
        // Never a silent hang: a pod no node can take (a node-scoped window steering it
        // off its nodes, no room elsewhere) says why.
        (WorkspacePhase::Creating, Some(why)) => ("Unschedulable", why.as_str()),
        (WorkspacePhase::Creating, None) => ("PodStarting", "the workspace pod is starting"),
        // Stopped by someone else: the cluster's own words for why, where it gave them.
        _ => match &disrupted {
            Some((reason, message)) => (reason.as_str(), message.as_str()),
            None => ("PodEnded", "the workspace pod has ended"),
        },
    };
    set_condition(
        &mut status.conditions,
        condition::READY,
        ready,
        reason,
        message,
        generation,
        now,
    );
    if condition_is_true(&status, condition::POD_REJECTED) {
        set_condition(
            &mut status.conditions,
            condition::POD_REJECTED,
            false,
            "Recreated",
            "a replacement pod was admitted by the kubelet's node",
            generation,
            now,
        );
    }
    clear_create_refusal(&mut status, generation, now);
    if condition_is_true(&status, condition::POD_CONFLICT) {
        set_condition(
            &mut status.conditions,
            condition::POD_CONFLICT,
            false,
            "Resolved",
            "the workspace's pod is its own",
            generation,
            now,
        );
    }
    status
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod status_tests;
