use super::*;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

fn t(s: &str) -> Timestamp {
    s.parse().expect("time")
}

fn occ(start: &str, end: &str) -> OccurrenceStatus {
    OccurrenceStatus {
        start: Time(t(start)),
        end: Time(t(end)),
    }
}

/// (what, before, after, now, want: (kind, id, summary contains))
type TransitionCase<'a> = (
    &'a str,
    Option<&'a OccurrenceStatus>,
    Option<&'a OccurrenceStatus>,
    Timestamp,
    Vec<(Kind, &'a str, &'a str)>,
);

/// (what, workspace, Event reason, desired, want: (kind, id))
type NoticeCase<'a> = (
    &'a str,
    Workspace,
    &'a str,
    Option<&'a MaintenanceNotice>,
    Option<(Kind, &'a str)>,
);

#[test]
fn window_transitions_send_start_and_end_once_per_occurrence() {
    let first = occ("2026-12-01T22:00:00Z", "2026-12-01T23:00:00Z");
    let extended = occ("2026-12-01T22:00:00Z", "2026-12-01T23:30:00Z");
    let next = occ("2026-12-02T22:00:00Z", "2026-12-02T23:00:00Z");
    let during = t("2026-12-01T22:00:01Z");
    let after = t("2026-12-01T23:00:00Z");
    // (what, before, after, now, want: (kind, id, summary contains))
    let cases: Vec<TransitionCase> = vec![
        ("nothing active", None, None, during, vec![]),
        (
            "an occurrence opens",
            None,
            Some(&first),
            during,
            vec![(
                Kind::WindowStart,
                "windowStart/upgrade/2026-12-01T22:00:00Z",
                "active until 2026-12-01T23:00:00Z",
            )],
        ),
        (
            "still the same occurrence",
            Some(&first),
            Some(&first),
            during,
            vec![],
        ),
        (
            "extended while active: not a new start",
            Some(&first),
            Some(&extended),
            during,
            vec![],
        ),
        (
            "it closes on time",
            Some(&first),
            None,
            after,
            vec![(
                Kind::WindowEnd,
                "windowEnd/upgrade/2026-12-01T22:00:00Z",
                "is over",
            )],
        ),
        (
            "suspended while active: ends early",
            Some(&first),
            None,
            during,
            vec![(
                Kind::WindowEnd,
                "windowEnd/upgrade/2026-12-01T22:00:00Z",
                "ended early at 2026-12-01T22:00:01Z",
            )],
        ),
        (
            "back to back: the old one ends before the new one starts",
            Some(&first),
            Some(&next),
            after,
            vec![
                (
                    Kind::WindowEnd,
                    "windowEnd/upgrade/2026-12-01T22:00:00Z",
                    "is over",
                ),
                (
                    Kind::WindowStart,
                    "windowStart/upgrade/2026-12-02T22:00:00Z",
                    "active",
                ),
            ],
        ),
    ];
    for (what, before, after_, now, want) in cases {
        let got = window_transitions("upgrade", Some("node upgrade"), before, after_, now);
        let got: Vec<(Kind, &str, bool)> = got
            .iter()
            .zip(&want)
            .map(|(d, w)| (d.kind, d.id.as_str(), d.summary.contains(w.2)))
            .collect();
        let want: Vec<(Kind, &str, bool)> = want.iter().map(|w| (w.0, w.1, true)).collect();
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn the_json_document_has_its_version_kind_window_workspace_times_and_message() {
    let ws: Workspace = serde_json::from_value(json!({
        "metadata": {"name": "ivy", "namespace": "dev"},
        "spec": {"podTemplate": {}},
        "status": {"phase": "Running", "nodeName": "node-1"},
    }))
    .expect("workspace");
    let doc = drain_stop(
        "upgrade",
        Some("node upgrade"),
        &occ("2026-12-01T22:00:00Z", "2026-12-01T23:00:00Z"),
        &ws,
        t("2026-12-01T22:00:02.5Z"),
    );
    assert_eq!(
        serde_json::to_value(&doc).expect("json"),
        json!({
            "version": "lifeguard.dev/notification/v1",
            "kind": "drainStop",
            "id": "drainStop/upgrade/2026-12-01T22:00:00Z/dev/ivy",
            "time": "2026-12-01T22:00:02Z",
            "window": {"name": "upgrade", "start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"},
            "workspace": {"namespace": "dev", "name": "ivy", "node": "node-1"},
            "message": "node upgrade",
            "summary": "maintenance window upgrade is stopping workspace dev/ivy on node node-1 (window until 2026-12-01T23:00:00Z)",
        })
    );
}

#[test]
fn an_eviction_stop_document_names_the_eviction_and_has_no_window() {
    let ws: Workspace = serde_json::from_value(json!({
        "metadata": {"name": "ivy", "namespace": "dev"},
        "spec": {"podTemplate": {}},
        "status": {"phase": "Running", "nodeName": "node-1"},
    }))
    .expect("workspace");
    let record = lifeguard_api::eviction::EvictionRecord {
        by: "kubernetes-admin".into(),
        node: "node-1".into(),
        pod_uid: "uid-1".into(),
        time: Time(t("2026-12-01T22:00:00Z")),
    };
    let notice = EvictionNotice::new(
        &record,
        lifeguard_api::eviction::OnEviction::Restart,
        t("2026-12-01T22:00:02.5Z"),
        jiff::SignedDuration::from_secs(30),
    );
    let doc = eviction_stop(&ws, &notice, t("2026-12-01T22:00:02.5Z"));
    assert_eq!(
        serde_json::to_value(&doc).expect("json"),
        json!({
            "version": "lifeguard.dev/notification/v1",
            "kind": "evictionStop",
            "id": "evictionStop/dev/ivy/2026-12-01T22:00:00Z",
            "time": "2026-12-01T22:00:02Z",
            "workspace": {"namespace": "dev", "name": "ivy", "node": "node-1"},
            "eviction": {"by": "kubernetes-admin", "node": "node-1",
                         "evictedAt": "2026-12-01T22:00:00Z", "stopAt": "2026-12-01T22:00:32Z"},
            "message": "kubernetes-admin evicted it from node node-1; lifeguard stops this workspace at 2026-12-01T22:00:32Z, saves its work, and starts it again on another node",
            "summary": "kubernetes-admin evicted workspace dev/ivy from node node-1; lifeguard stops it at 2026-12-01T22:00:32Z, saving its work",
        })
    );
}

fn notice(window: &str, start: &str) -> MaintenanceNotice {
    MaintenanceNotice {
        window: window.into(),
        start: Time(t(start)),
        end: Time(t("2026-12-01T23:00:00Z")),
        message: None,
    }
}

#[test]
fn notice_changes_send_a_notice_or_its_withdrawal_and_nothing_else() {
    let now = t("2026-12-01T21:00:00Z");
    let told = notice("upgrade", "2026-12-01T22:00:00Z");
    let carrying = |n: Option<&MaintenanceNotice>| -> Workspace {
        serde_json::from_value(json!({
            "metadata": {"name": "ivy", "namespace": "dev"},
            "spec": {"podTemplate": {}},
            "status": {"phase": "Running", "maintenanceNotice": n},
        }))
        .expect("workspace")
    };
    // (what, workspace, Event reason, desired, want: (kind, id))
    let cases: Vec<NoticeCase> = vec![
        (
            "told",
            carrying(None),
            REASON_SCHEDULED,
            Some(&told),
            Some((Kind::Notice, "notice/upgrade/2026-12-01T22:00:00Z/dev/ivy")),
        ),
        (
            "withdrawn: about the notice it carried",
            carrying(Some(&told)),
            REASON_WITHDRAWN,
            None,
            Some((
                Kind::NoticeWithdrawn,
                "noticeWithdrawn/upgrade/2026-12-01T22:00:00Z/dev/ivy",
            )),
        ),
        (
            "over: the window's end says it",
            carrying(Some(&told)),
            crate::notice::REASON_OVER,
            None,
            None,
        ),
        (
            "stopped: the drain stop says it",
            carrying(Some(&told)),
            crate::notice::REASON_STOPPED,
            None,
            None,
        ),
        (
            "withdrawn, but nothing was carried",
            carrying(None),
            REASON_WITHDRAWN,
            None,
            None,
        ),
    ];
    for (what, ws, reason, desired, want) in cases {
        let got = notice_change(&ws, reason, desired, now);
        assert_eq!(
            got.as_ref().map(|d| (d.kind, d.id.as_str())),
            want,
            "{what}"
        );
        if let Some(doc) = got {
            let value: Value = serde_json::to_value(&doc).expect("json");
            assert_eq!(
                value["workspace"],
                json!({"namespace": "dev", "name": "ivy"}),
                "{what}: no node yet"
            );
            assert_eq!(value["window"]["start"], "2026-12-01T22:00:00Z", "{what}");
            assert!(
                value.get("message").is_none(),
                "{what}: no message, no field"
            );
        }
    }
}
