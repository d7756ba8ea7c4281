//! How the verdict shows on the Node: our own condition, an optional taint. Pure.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{NodeCondition, Taint};
use serde_json::{Value, json};

use crate::verdict::{Judgement, Verdict};

/// The Node condition the prober owns. No other writer uses this type, and a strategic
/// merge patch of `status.conditions` merges by `type`, so writing it never disturbs the
/// kubelet's conditions.
pub const CONDITION_TYPE: &str = "LifeguardProbesHealthy";
/// The taint set while the node is unhealthy (with `--taint`).
pub const TAINT_KEY: &str = "lifeguard.dev/unhealthy";
pub const TAINT_EFFECT: &str = "NoSchedule";
pub const TAINT_VALUE: &str = "probes-failing";
/// A label mirroring our taint on the node (same key and value). Taints cannot be
/// selected; labels can, so the fleet guard counts tainted nodes with a label selector
/// instead of reading every Node.
pub const TAINTED_LABEL: &str = TAINT_KEY;

/// The condition's content, without times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

pub fn desired(judgement: &Judgement) -> Desired {
    let (status, reason) = match judgement.verdict {
        Verdict::Healthy => ("True", "ProbesPassing"),
        Verdict::Unhealthy => ("False", "ProbesFailing"),
        Verdict::Unknown => ("Unknown", "ProbesInconclusive"),
        // Not False: probes stopped because the node takes no pods, not because it failed.
        Verdict::Cordoned => ("Unknown", "NodeCordoned"),
    };
    Desired {
        status,
        reason,
        message: judgement.message.clone(),
    }
}

/// What the node currently shows (as read at start, then as last written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub status: String,
    pub reason: String,
    pub message: String,
    pub transition: Timestamp,
    pub heartbeat: Timestamp,
}

pub fn shown(conditions: &[NodeCondition]) -> Option<Shown> {
    let c = conditions.iter().find(|c| c.type_ == CONDITION_TYPE)?;
    let heartbeat = c.last_heartbeat_time.as_ref().map(|t| t.0);
    let transition = c.last_transition_time.as_ref().map(|t| t.0);
    Some(Shown {
        status: c.status.clone(),
        reason: c.reason.clone().unwrap_or_default(),
        message: c.message.clone().unwrap_or_default(),
        transition: transition.or(heartbeat).unwrap_or(Timestamp::UNIX_EPOCH),
        heartbeat: heartbeat.unwrap_or(Timestamp::UNIX_EPOCH),
    })
}

/// Write when the content changed, or when the heartbeat is due (so readers can tell a
/// live prober from a stale condition).
pub fn needs_write(
    shown: Option<&Shown>,
    want: &Desired,
    now: Timestamp,
    heartbeat: SignedDuration,
) -> bool {
    match shown {
        None => true,
        Some(s) => {
            s.status != want.status
                || s.reason != want.reason
                || s.message != want.message
                || now.duration_since(s.heartbeat) >= heartbeat
        }
    }
}

/// The strategic merge patch for `nodes/status`, and what the node shows after it.
pub fn patch(shown: Option<&Shown>, want: &Desired, now: Timestamp) -> (Value, Shown) {
    let transition = match shown {
        Some(s) if s.status == want.status => s.transition,
        _ => now,
    };
    let body = json!({"status": {"conditions": [{
        "type": CONDITION_TYPE,
        "status": want.status,
        "reason": want.reason,
        "message": want.message,
        "lastHeartbeatTime": now.to_string(),
        "lastTransitionTime": transition.to_string(),
    }]}});
    let after = Shown {
        status: want.status.into(),
        reason: want.reason.into(),
        message: want.message.clone(),
        transition,
        heartbeat: now,
    };
    (body, after)
}

/// The node's taints after applying the verdict, or None when nothing must change.
/// Unknown leaves the taint as it is: an API hiccup is no reason to flip scheduling. So
/// does Cordoned: the node takes no pods anyway, and whatever the checks found before the
/// cordon still holds when it is uncordoned.
pub fn taints_after(current: &[Taint], verdict: Verdict) -> Option<Vec<Taint>> {
    let present = current.iter().any(is_ours);
    match verdict {
        Verdict::Unhealthy if !present => {
            let mut next = current.to_vec();
            next.push(Taint {
                key: TAINT_KEY.into(),
                effect: TAINT_EFFECT.into(),
                value: Some(TAINT_VALUE.into()),
                time_added: None,
            });
            Some(next)
        }
        Verdict::Healthy if present => {
            Some(current.iter().filter(|t| !is_ours(t)).cloned().collect())
        }
        _ => None,
    }
}

pub fn is_ours(t: &Taint) -> bool {
    t.key == TAINT_KEY && t.effect == TAINT_EFFECT
}

/// The change that brings the node's taint and its mirror label in line with the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Marks {
    /// JSON merge patch; `resourceVersion` makes it fail with 409 if the node changed.
    pub body: Value,
    /// It adds our taint: the fleet guard decides first.
    pub adds_taint: bool,
}

/// None when the node already shows what the verdict asks for. The label follows the
/// taint (also one set by hand, or by an older prober without the label).
pub fn marks(
    taints: &[Taint],
    labels: Option<&BTreeMap<String, String>>,
    verdict: Verdict,
    resource_version: Option<&str>,
) -> Option<Marks> {
    let next = taints_after(taints, verdict);
    let tainted = next.as_deref().unwrap_or(taints).iter().any(is_ours);
    let labelled = labels.is_some_and(|l| l.contains_key(TAINTED_LABEL));
    if next.is_none() && labelled == tainted {
        return None;
    }
    let mut body = json!({"metadata": {"resourceVersion": resource_version}});
    if labelled != tainted {
        body["metadata"]["labels"] = json!({TAINTED_LABEL: tainted.then_some(TAINT_VALUE)});
    }
    let adds_taint = next.is_some() && tainted;
    if let Some(next) = next {
        body["spec"] = json!({"taints": next});
    }
    Some(Marks { body, adds_taint })
}

/// Event to publish when the verdict moves from `before` to `now` (reason, is warning).
pub fn event(before: Option<Verdict>, now: Verdict) -> Option<(&'static str, bool)> {
    match (before, now) {
        (Some(Verdict::Unhealthy), Verdict::Unhealthy) => None,
        (_, Verdict::Unhealthy) => Some(("NodeUnhealthy", true)),
        (Some(Verdict::Unhealthy), Verdict::Healthy) => Some(("NodeHealthy", false)),
        _ => None,
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
