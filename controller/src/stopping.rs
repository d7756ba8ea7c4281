//! Workspace pods being deleted while they hold lifeguard's disposal finalizer, as the pod
//! watch last saw them, and when the sweep releases one. Pure.
//!
//! The sweep reads these instead of listing every workspace pod and every Workspace each
//! interval: two lists whose cost grows with the fleet (a list of 10,000 Workspaces costs
//! the API server about 2.6 s of CPU, docs/benchmarks.md), made to find the few pods that
//! are stopping. The pod watch already sees every workspace pod; it keeps these few fields
//! of the stopping ones (`pod_names`), a hundred bytes or so a pod, nothing for the rest.
//!
//! A pod that is not being deleted is never stuck, so it is not tracked: a pod whose
//! Workspace is gone is deleted by the garbage collector (its owner reference), and becomes
//! a stopping pod then; one orphaned on purpose keeps our finalizer until someone deletes
//! it, and is released then.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use lifeguard_api::disposal;
use lifeguard_api::names::POD_FINALIZER;

use crate::workspace::plan::{Settings, has_finalizer};

/// What the sweep needs of a stopping pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoppingPod {
    /// The pod's `deletionTimestamp`: when its delete was asked plus its grace period.
    pub deleting_since: Timestamp,
    /// When its delete was asked: `deletionTimestamp` less `deletionGracePeriodSeconds`.
    pub delete_asked: Timestamp,
    /// The Workspace that controls the pod, if one does.
    pub owner: Option<OwningWorkspace>,
    /// The pod waits for its backup agent: confirmation required, no answer yet.
    pub awaits_agent: bool,
}

/// A controlling Workspace, by name and UID (a same-named successor is another Workspace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwningWorkspace {
    pub name: Box<str>,
    pub uid: Box<str>,
}

/// The Workspace that controls the pod, if one does.
pub fn controlling_workspace(pod: &ObjectMeta) -> Option<&OwnerReference> {
    pod.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true) && r.kind == "Workspace")
}

impl StoppingPod {
    /// `Some` for a pod being deleted that holds our finalizer: the only pods the sweep may
    /// have to release.
    pub fn of(meta: &ObjectMeta) -> Option<Self> {
        if !has_finalizer(meta.finalizers.as_ref(), POD_FINALIZER) {
            return None;
        }
        let deleting_since = meta.deletion_timestamp.as_ref()?.0;
        let grace =
            jiff::SignedDuration::from_secs(meta.deletion_grace_period_seconds.unwrap_or(0));
        let annotations = meta.annotations.as_ref();
        Some(Self {
            deleting_since,
            delete_asked: deleting_since.checked_sub(grace).unwrap_or(deleting_since),
            owner: controlling_workspace(meta).map(|r| OwningWorkspace {
                name: r.name.as_str().into(),
                uid: r.uid.as_str().into(),
            }),
            awaits_agent: disposal::confirmation_required(annotations)
                && disposal::result(annotations).is_none(),
        })
    }
}

/// Why a stopping pod is released now, if it is. `workspace_exists`: the Workspace that
/// controls it (matched by UID) still exists; a pod no Workspace controls has none.
pub fn release_cause(
    pod: &StoppingPod,
    workspace_exists: bool,
    now: Timestamp,
    settings: &Settings,
) -> Option<&'static str> {
    if !workspace_exists {
        return Some("workspace_gone");
    }
    // A pod whose Workspace exists is the reconciler's to release: it records the final
    // state (and, for a pod waiting for its backup agent, the outcome) first, and releases
    // at the latest at its own deadline: the disposal timeout after the deletion, or for a
    // pod waiting for its agent, the agent's wait after the containers stopped, which
    // starts at most the disposal timeout plus one agent's wait after the deletion
    // (`disposal::agent_asked_at`; the sweep reads no container statuses, so it assumes the
    // latest). The sweep steps in only a disposal timeout after that deadline, for a
    // reconciler that did not act. At its deadline, the sweep raced a busy reconciler: in
    // a drain of 2,000 workspaces it released 46 pods before their final state was
    // recorded, and read each overdue pod and its Workspace every interval meanwhile.
    let reconciler_deadline = if pod.awaits_agent {
        let twice_the_wait = settings
            .disposal_confirm_timeout
            .checked_add(settings.disposal_confirm_timeout)
            .unwrap_or(settings.disposal_confirm_timeout);
        settings
            .disposal_timeout
            .checked_add(twice_the_wait)
            .unwrap_or(twice_the_wait)
    } else {
        settings.disposal_timeout
    };
    let allowed = reconciler_deadline
        .checked_add(settings.disposal_timeout)
        .unwrap_or(reconciler_deadline);
    let overdue = pod
        .deleting_since
        .checked_add(allowed)
        .is_ok_and(|deadline| now >= deadline);
    overdue.then_some("deletion_overdue")
}

/// Whether the sweep should look at a stopping pod with the API, judging from the caches
/// alone: `workspace_cached` says a Workspace of the controller's name is in the
/// controller's cache (which does not keep UIDs). The look (fresh reads of the pod and of
/// the Workspace, by UID) decides; this only spares the API the pods nothing can be done
/// for yet. A same-named successor in the cache hides a gone predecessor until the pod is
/// overdue: the sweep releases it then, and the look names the cause `workspace_gone`.
pub fn worth_a_look(
    pod: &StoppingPod,
    workspace_cached: bool,
    now: Timestamp,
    settings: &Settings,
) -> bool {
    let exists = pod.owner.is_some() && workspace_cached;
    release_cause(pod, exists, now, settings).is_some()
}

/// How long ago the delete of the longest-stopping of `pods` was asked (zero for none):
/// what `lifeguard_controller_stopping_pod_oldest_seconds` reports, since a pod the sweep
/// fails to release shows there first. From the request, not from `deletionTimestamp`,
/// which lies a grace period after it: a long grace period must not hide a stuck pod.
pub fn oldest_deleting<'a>(
    pods: impl IntoIterator<Item = &'a StoppingPod>,
    now: Timestamp,
) -> jiff::SignedDuration {
    pods.into_iter()
        .map(|pod| now.duration_since(pod.delete_asked))
        .max()
        .unwrap_or_default()
        .max(jiff::SignedDuration::ZERO)
}

#[cfg(test)]
#[path = "stopping_tests.rs"]
mod tests;
