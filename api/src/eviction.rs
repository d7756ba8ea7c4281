//! Evictions of workspace pods, the parts the webhook and the controller share. The
//! webhook answers an eviction of a running workspace pod 429 and records it on the
//! Workspace ([`EVICTION_ANNOTATION`]); the controller stops that pod gracefully and, once
//! it is gone, starts the workspace again (or leaves it stopped, [`OnEviction::Stop`]),
//! recording the eviction it acted on in `status.lastEviction`.

use kube::ResourceExt;

use crate::Workspace;
use crate::names::EVICTION_ANNOTATION;
pub use crate::workspace::{EvictionRecord, OnEviction};

/// Ready condition reason (and Event reason) of a workspace stopped by an eviction.
pub const REASON_EVICTED: &str = "Evicted";

/// The eviction recorded on `ws`; `None` when there is none or it cannot be read (an
/// unreadable value is treated as absent: the next eviction overwrites it).
pub fn recorded(ws: &Workspace) -> Option<EvictionRecord> {
    ws.annotations()
        .get(EVICTION_ANNOTATION)
        .and_then(|v| serde_json::from_str(v).ok())
}

/// The eviction recorded on `ws` for the pod with this UID.
pub fn recorded_for(ws: &Workspace, pod_uid: Option<&str>) -> Option<EvictionRecord> {
    recorded(ws).filter(|r| Some(r.pod_uid.as_str()) == pod_uid)
}

/// `spec.onEviction`, with its default.
pub fn on_eviction(ws: &Workspace) -> OnEviction {
    ws.spec.on_eviction.unwrap_or_default()
}

/// The recorded eviction this workspace has not acted on yet (its pod is gone).
pub fn pending(ws: &Workspace) -> Option<EvictionRecord> {
    let record = recorded(ws)?;
    let acted = ws
        .status
        .as_ref()
        .and_then(|s| s.last_eviction.as_ref())
        .is_some_and(|last| last.pod_uid == record.pod_uid);
    (!acted).then_some(record)
}

/// What an evicted workspace pod is told before it is stopped, in its
/// [`EVICTION_NOTICE_ANNOTATION`](crate::names::EVICTION_NOTICE_ANNOTATION).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EvictionNotice {
    /// The user of the eviction request.
    pub by: String,
    /// The node the pod is evicted from.
    pub node: String,
    /// When the first eviction of the pod was asked.
    pub evicted_at: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    /// When lifeguard starts the stop (the pod's graceful delete, then the disposal
    /// handshake): the notice's time plus the controller's `--eviction-notice`.
    pub stop_at: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    /// One line for the person in the IDE.
    pub message: String,
}

impl EvictionNotice {
    /// The notice for `record`, given at `now`, whose stop starts `notice` later.
    pub fn new(
        record: &EvictionRecord,
        then: OnEviction,
        now: jiff::Timestamp,
        notice: jiff::SignedDuration,
    ) -> Self {
        let now = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
        let stop_at = now.checked_add(notice).unwrap_or(now);
        let when = if stop_at > now {
            format!("at {stop_at}")
        } else {
            "now".to_string()
        };
        let after = match then {
            OnEviction::Restart => "starts it again on another node",
            OnEviction::Stop => "leaves it stopped (onEviction: Stop)",
        };
        let message = format!(
            "{}; lifeguard stops this workspace {when}, saves its work, and {after}",
            record.describe()
        );
        Self {
            by: record.by.clone(),
            node: record.node.clone(),
            evicted_at: record.time.clone(),
            stop_at: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(stop_at),
            message,
        }
    }

    pub fn to_annotation(&self) -> String {
        // A struct of strings and times always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The notice in `annotations`; `None` when there is none or it cannot be read.
    pub fn of(annotations: Option<&std::collections::BTreeMap<String, String>>) -> Option<Self> {
        annotations?
            .get(crate::names::EVICTION_NOTICE_ANNOTATION)
            .and_then(|v| serde_json::from_str(v).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::{SignedDuration, Timestamp};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn record() -> EvictionRecord {
        EvictionRecord {
            by: "system:serviceaccount:kube-system:cluster-autoscaler".into(),
            node: "node-2".into(),
            pod_uid: "uid-1".into(),
            time: Time("2026-12-01T12:00:00Z".parse().unwrap()),
        }
    }

    #[test]
    fn a_notice_says_who_evicted_the_pod_when_the_stop_starts_and_what_follows() {
        let now: Timestamp = "2026-12-01T12:00:05.700Z".parse().unwrap();
        let cases = [
            (
                SignedDuration::ZERO,
                OnEviction::Restart,
                "2026-12-01T12:00:05Z",
                "system:serviceaccount:kube-system:cluster-autoscaler evicted it from node node-2; \
                 lifeguard stops this workspace now, saves its work, and starts it again on another node",
            ),
            (
                SignedDuration::from_secs(30),
                OnEviction::Stop,
                "2026-12-01T12:00:35Z",
                "system:serviceaccount:kube-system:cluster-autoscaler evicted it from node node-2; \
                 lifeguard stops this workspace at 2026-12-01T12:00:35Z, saves its work, and leaves \
                 it stopped (onEviction: Stop)",
            ),
        ];
        for (notice, then, stop_at, message) in cases {
            let n = EvictionNotice::new(&record(), then, now, notice);
            assert_eq!(n.stop_at.0.to_string(), stop_at, "{notice}");
            assert_eq!(n.message, message, "{notice}");
            assert_eq!(
                (n.by.as_str(), n.node.as_str()),
                (record().by.as_str(), "node-2")
            );
            let annotations = [(
                crate::names::EVICTION_NOTICE_ANNOTATION.to_string(),
                n.to_annotation(),
            )]
            .into();
            assert_eq!(EvictionNotice::of(Some(&annotations)), Some(n), "{notice}");
        }
    }

    #[test]
    fn the_annotation_is_the_documented_json_and_a_bad_one_reads_as_none() {
        let now: Timestamp = "2026-12-01T12:00:05Z".parse().unwrap();
        let n = EvictionNotice::new(&record(), OnEviction::Restart, now, SignedDuration::ZERO);
        let value: serde_json::Value = serde_json::from_str(&n.to_annotation()).unwrap();
        let mut keys: Vec<_> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["by", "evictedAt", "message", "node", "stopAt"]);
        assert_eq!(value["evictedAt"], "2026-12-01T12:00:00Z");
        for bad in ["", "{", "{\"by\": 1}"] {
            let annotations = [(
                crate::names::EVICTION_NOTICE_ANNOTATION.to_string(),
                bad.to_string(),
            )]
            .into();
            assert_eq!(EvictionNotice::of(Some(&annotations)), None, "{bad:?}");
        }
        assert_eq!(EvictionNotice::of(None), None);
    }
}
