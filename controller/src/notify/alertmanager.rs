//! The `alertmanager` format: each document as a one-alert array for Alertmanager's
//! `POST /api/v2/alerts`. Pure.
//!
//! Each document is about a state with a start and an end, which is what an alert is: the
//! occurrence is active (until its end), a workspace is due to be drained (until the
//! occurrence is over), a workspace was drained (likewise). Alertmanager identifies an
//! alert by its labels, so the labels hold only what names that state (never the node,
//! which moves: it is an annotation), and the end documents (`windowEnd`,
//! `noticeWithdrawn`) resolve the alert their start opened by sending the same labels with
//! `endsAt` now. A re-sent document is the same alert again: Alertmanager merges it.

use serde_json::{Map, Value, json};

use super::document::{Kind, Notification};

/// The alert names, one per state.
pub const WINDOW_ACTIVE: &str = "LifeguardMaintenanceWindowActive";
pub const DRAIN_SCHEDULED: &str = "LifeguardWorkspaceDrainScheduled";
pub const DRAINED: &str = "LifeguardWorkspaceDrained";
pub const EVICTED: &str = "LifeguardWorkspaceEvicted";

pub fn alertname(kind: Kind) -> &'static str {
    match kind {
        Kind::WindowStart | Kind::WindowEnd => WINDOW_ACTIVE,
        Kind::Notice | Kind::NoticeWithdrawn => DRAIN_SCHEDULED,
        Kind::DrainStop => DRAINED,
        Kind::EvictionStop => EVICTED,
    }
}

/// The body posted for `doc`: `[alert]`.
pub fn alerts(doc: &Notification) -> Value {
    let mut labels = Map::new();
    let put = |map: &mut Map<String, Value>, k: &str, v: &str| {
        map.insert(k.to_string(), Value::String(v.to_string()));
    };
    put(&mut labels, "alertname", alertname(doc.kind));
    put(&mut labels, "severity", "info");
    put(&mut labels, "source", "lifeguard");
    if let Some(window) = &doc.window {
        put(&mut labels, "window", &window.name);
    }
    if let Some(cluster) = &doc.cluster {
        put(&mut labels, "cluster", cluster);
    }
    if let Some(ws) = &doc.workspace {
        put(&mut labels, "namespace", &ws.namespace);
        put(&mut labels, "workspace", &ws.name);
    }
    let mut annotations = Map::new();
    put(&mut annotations, "summary", &doc.summary);
    if let Some(message) = &doc.message {
        put(&mut annotations, "description", message);
    }
    put(&mut annotations, "kind", doc.kind.as_str());
    put(&mut annotations, "id", &doc.id);
    if let Some(window) = &doc.window {
        put(&mut annotations, "windowStart", &window.start);
        put(&mut annotations, "windowEnd", &window.end);
    }
    if let Some(eviction) = &doc.eviction {
        put(&mut annotations, "evictedBy", &eviction.by);
        put(&mut annotations, "evictedAt", &eviction.evicted_at);
        put(&mut annotations, "stopAt", &eviction.stop_at);
    }
    if let Some(node) = doc.workspace.as_ref().and_then(|w| w.node.as_deref()) {
        put(&mut annotations, "node", node);
    }
    let (starts_at, ends_at) = match (doc.kind, &doc.window, &doc.eviction) {
        // Active from the occurrence's start until its end: resolved by then even if the
        // end document never comes (a controller down at the end).
        (Kind::WindowStart, Some(w), _) => (w.start.clone(), w.end.clone()),
        (Kind::WindowEnd, Some(w), _) => (w.start.clone(), doc.time.clone()),
        (Kind::Notice | Kind::DrainStop, Some(w), _) => (doc.time.clone(), w.end.clone()),
        // From the notice to the start of the stop: what the person in the IDE has left.
        (Kind::EvictionStop, _, Some(e)) => (doc.time.clone(), e.stop_at.clone()),
        _ => (doc.time.clone(), doc.time.clone()),
    };
    json!([{
        "labels": labels,
        "annotations": annotations,
        "startsAt": starts_at,
        "endsAt": ends_at,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::document::{VERSION, WindowRef, WorkspaceRef};

    fn doc(kind: Kind, workspace: bool) -> Notification {
        Notification {
            version: VERSION,
            kind,
            id: format!("{}/upgrade/2026-12-01T22:00:00Z", kind.as_str()),
            time: "2026-12-01T22:10:00Z".into(),
            cluster: Some("eu-1".into()),
            window: Some(WindowRef {
                name: "upgrade".into(),
                start: "2026-12-01T22:00:00Z".into(),
                end: "2026-12-01T23:00:00Z".into(),
            }),
            eviction: None,
            workspace: workspace.then(|| WorkspaceRef {
                namespace: "dev".into(),
                name: "ivy".into(),
                node: Some("node-1".into()),
            }),
            message: Some("node upgrade".into()),
            summary: "a line".into(),
        }
    }

    #[test]
    fn each_kind_opens_or_resolves_its_alert() {
        // (kind, about a workspace, want: alertname, startsAt, endsAt)
        let cases = [
            (
                Kind::WindowStart,
                false,
                WINDOW_ACTIVE,
                "2026-12-01T22:00:00Z",
                "2026-12-01T23:00:00Z",
            ),
            (
                Kind::WindowEnd,
                false,
                WINDOW_ACTIVE,
                "2026-12-01T22:00:00Z",
                "2026-12-01T22:10:00Z",
            ),
            (
                Kind::Notice,
                true,
                DRAIN_SCHEDULED,
                "2026-12-01T22:10:00Z",
                "2026-12-01T23:00:00Z",
            ),
            (
                Kind::NoticeWithdrawn,
                true,
                DRAIN_SCHEDULED,
                "2026-12-01T22:10:00Z",
                "2026-12-01T22:10:00Z",
            ),
            (
                Kind::DrainStop,
                true,
                DRAINED,
                "2026-12-01T22:10:00Z",
                "2026-12-01T23:00:00Z",
            ),
        ];
        for (kind, workspace, name, starts, ends) in cases {
            let body = alerts(&doc(kind, workspace));
            let alert = &body[0];
            assert_eq!(body.as_array().map(Vec::len), Some(1), "{kind:?}");
            assert_eq!(alert["labels"]["alertname"], name, "{kind:?}");
            assert_eq!(alert["startsAt"], starts, "{kind:?}");
            assert_eq!(alert["endsAt"], ends, "{kind:?}");
            assert_eq!(alert["annotations"]["kind"], kind.as_str(), "{kind:?}");
        }
    }

    #[test]
    fn an_eviction_stop_is_an_alert_of_its_own_until_the_stop_starts() {
        use crate::notify::document::EvictionRef;
        let mut d = doc(Kind::EvictionStop, true);
        d.window = None;
        d.eviction = Some(EvictionRef {
            by: "system:serviceaccount:karpenter:karpenter".into(),
            node: "node-1".into(),
            evicted_at: "2026-12-01T22:09:58Z".into(),
            stop_at: "2026-12-01T22:10:30Z".into(),
        });
        let body = alerts(&d);
        let alert = &body[0];
        assert_eq!(alert["labels"]["alertname"], EVICTED);
        assert_eq!(alert["labels"].get("window"), None, "no window caused it");
        assert_eq!(alert["labels"]["workspace"], "ivy");
        assert_eq!(alert["startsAt"], "2026-12-01T22:10:00Z");
        assert_eq!(alert["endsAt"], "2026-12-01T22:10:30Z");
        assert_eq!(
            alert["annotations"]["evictedBy"],
            "system:serviceaccount:karpenter:karpenter"
        );
        assert_eq!(alert["annotations"].get("windowStart"), None);
    }

    #[test]
    fn the_labels_name_the_state_and_the_node_is_only_an_annotation() {
        let notice = alerts(&doc(Kind::Notice, true));
        let withdrawn = alerts(&doc(Kind::NoticeWithdrawn, true));
        assert_eq!(
            notice[0]["labels"], withdrawn[0]["labels"],
            "the withdrawal resolves the notice's alert"
        );
        assert_eq!(
            notice[0]["labels"],
            json!({"alertname": DRAIN_SCHEDULED, "severity": "info", "source": "lifeguard",
                   "window": "upgrade", "cluster": "eu-1", "namespace": "dev", "workspace": "ivy"})
        );
        assert_eq!(notice[0]["annotations"]["node"], "node-1");
        assert_eq!(notice[0]["annotations"]["description"], "node upgrade");
        assert_eq!(
            alerts(&doc(Kind::WindowStart, false))[0]["labels"],
            alerts(&doc(Kind::WindowEnd, false))[0]["labels"]
        );
    }
}
