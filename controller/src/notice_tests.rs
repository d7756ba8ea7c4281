//! What a workspace and its pod say about a coming drain: one row per transition.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use lifeguard_api::Workspace;
use lifeguard_api::names::MAINTENANCE_NOTICE_ANNOTATION;
use lifeguard_api::notice::MaintenanceNotice;
use lifeguard_api::workspace::condition::MAINTENANCE_SCHEDULED;
use serde_json::{Value, json};

use super::*;

fn at(text: &str) -> Timestamp {
    text.parse().expect("timestamp literal")
}

fn notice(window: &str, start: &str) -> MaintenanceNotice {
    MaintenanceNotice {
        window: window.into(),
        start: Time(at(start)),
        end: Time(at(start) + jiff::SignedDuration::from_hours(1)),
        message: Some("node upgrade".into()),
    }
}

fn ws(phase: &str, carried: Option<&MaintenanceNotice>, deleting: bool) -> Workspace {
    let mut meta = json!({"name": "alice", "namespace": "dev", "uid": "ws-uid", "generation": 1});
    if deleting {
        meta["deletionTimestamp"] = json!("2026-12-01T21:50:00Z");
    }
    serde_json::from_value(json!({
        "metadata": meta,
        "spec": {"podTemplate": {}},
        "status": {"phase": phase, "maintenanceNotice": carried},
    }))
    .expect("workspace literal")
}

fn condition(status: &lifeguard_api::WorkspaceStatus) -> Option<(String, String)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == MAINTENANCE_SCHEDULED)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

#[test]
fn notice_transitions() {
    let upgrade = notice("upgrade", "2026-12-01T22:00:00Z");
    let moved = notice("upgrade", "2026-12-02T22:00:00Z");
    let now = at("2026-12-01T21:50:00Z");
    let after = at("2026-12-01T23:00:00Z");
    // (what, workspace, desired, now, want: None = no write; Some(condition, event reason))
    type Want = Option<(&'static str, &'static str, Option<&'static str>)>;
    let cases: Vec<(&str, Workspace, Option<&MaintenanceNotice>, Timestamp, Want)> = vec![
        (
            "nothing to say",
            ws("Running", None, false),
            None,
            now,
            None,
        ),
        (
            "told once",
            ws("Running", None, false),
            Some(&upgrade),
            now,
            Some(("True", REASON_SCHEDULED, Some(REASON_SCHEDULED))),
        ),
        (
            "already told",
            ws("Running", Some(&upgrade), false),
            Some(&upgrade),
            now,
            None,
        ),
        (
            "the window moved: told again",
            ws("Running", Some(&upgrade), false),
            Some(&moved),
            now,
            Some(("True", REASON_SCHEDULED, Some(REASON_SCHEDULED))),
        ),
        (
            "the occurrence is over",
            ws("Running", Some(&upgrade), false),
            None,
            after,
            Some(("False", REASON_OVER, None)),
        ),
        (
            "the window was deleted before it opened",
            ws("Running", Some(&upgrade), false),
            None,
            now,
            Some(("False", REASON_WITHDRAWN, Some(REASON_WITHDRAWN))),
        ),
        (
            "the workspace stopped",
            ws("Stopped", Some(&upgrade), false),
            None,
            now,
            Some(("False", REASON_STOPPED, None)),
        ),
    ];
    for (what, workspace, desired, t, want) in cases {
        let got = step(&workspace, desired, t);
        match (got, want) {
            (None, None) => {}
            (Some(change), Some((cond, reason, event))) => {
                assert_eq!(change.status.maintenance_notice.as_ref(), desired, "{what}");
                assert_eq!(
                    condition(&change.status),
                    Some((cond.to_string(), reason.to_string())),
                    "{what}"
                );
                assert_eq!(change.event.as_ref().map(|e| e.0), event, "{what}");
                if let Some((_, note)) = &change.event {
                    assert!(note.contains("upgrade"), "{what}: {note}");
                }
            }
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn only_running_workspaces_are_told() {
    let cases = [
        ("Pending", false, true),
        ("Creating", false, true),
        ("Running", false, true),
        ("Stopping", false, true),
        ("Stopped", false, false),
        ("Failed", false, false),
        ("Running", true, false),
    ];
    for (phase, deleting, want) in cases {
        assert_eq!(
            eligible(&ws(phase, None, deleting)),
            want,
            "{phase} deleting={deleting}"
        );
    }
}

fn pod(owner_uid: &str, annotation: Option<&str>, deleting: bool) -> Pod {
    let mut meta = json!({
        "name": "ws-alice", "namespace": "dev",
        "ownerReferences": [{"apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                             "name": "alice", "uid": owner_uid, "controller": true}],
    });
    if let Some(value) = annotation {
        meta["annotations"] = json!({MAINTENANCE_NOTICE_ANNOTATION: value});
    }
    if deleting {
        meta["deletionTimestamp"] = json!("2026-12-01T21:50:00Z");
    }
    serde_json::from_value(json!({"metadata": meta})).expect("pod literal")
}

#[test]
fn the_pod_annotation_follows_the_notice() {
    let upgrade = notice("upgrade", "2026-12-01T22:00:00Z");
    let carried = serde_json::to_string(&upgrade).expect("serializes");
    let workspace = ws("Running", None, false);
    let cases: Vec<(&str, Pod, Option<&MaintenanceNotice>, Option<Value>)> = vec![
        (
            "set",
            pod("ws-uid", None, false),
            Some(&upgrade),
            Some(json!(carried)),
        ),
        (
            "already set",
            pod("ws-uid", Some(&carried), false),
            Some(&upgrade),
            None,
        ),
        (
            "removed",
            pod("ws-uid", Some(&carried), false),
            None,
            Some(Value::Null),
        ),
        ("nothing to remove", pod("ws-uid", None, false), None, None),
        (
            "a stranger's pod",
            pod("other", None, false),
            Some(&upgrade),
            None,
        ),
        (
            "a pod going away",
            pod("ws-uid", None, true),
            Some(&upgrade),
            None,
        ),
    ];
    for (what, p, desired, want) in cases {
        let got = pod_patch(&workspace, &p, desired)
            .map(|patch| patch["metadata"]["annotations"][MAINTENANCE_NOTICE_ANNOTATION].clone());
        assert_eq!(got, want, "{what}");
    }
    // The annotation is the notice as JSON: what an IDE in the pod parses.
    let parsed: Value = serde_json::from_str(&carried).expect("JSON");
    assert_eq!(parsed["window"], "upgrade");
    assert_eq!(parsed["start"], "2026-12-01T22:00:00Z");
    assert_eq!(parsed["message"], "node upgrade");
}

#[test]
fn a_status_that_ends_the_workspace_takes_its_notice_back_in_the_same_write() {
    let upgrade = notice("upgrade", "2026-12-01T22:00:00Z");
    let before = ws("Running", Some(&upgrade), false);
    let during = at("2026-12-01T22:10:00Z");
    let after_end = at("2026-12-01T23:10:00Z");
    // (what, phase written, now, want: notice kept?, condition)
    let cases = [
        ("still running", "Running", during, true, None),
        (
            "stopped by the drain",
            "Stopped",
            during,
            false,
            Some(("False", REASON_STOPPED)),
        ),
        (
            "failed",
            "Failed",
            during,
            false,
            Some(("False", REASON_STOPPED)),
        ),
        (
            "stopped after the window ended",
            "Stopped",
            after_end,
            false,
            Some(("False", REASON_OVER)),
        ),
    ];
    for (what, phase, now, kept, want) in cases {
        let mut written = before.status.clone().unwrap_or_default();
        written.phase = serde_json::from_value(json!(phase)).expect("phase literal");
        let got = settled(&before, written, now);
        assert_eq!(got.maintenance_notice.is_some(), kept, "{what}");
        let want = want.map(|(s, r)| (s.to_string(), r.to_string()));
        assert_eq!(condition(&got), want, "{what}");
        assert_eq!(
            got.phase,
            serde_json::from_value(json!(phase)).expect("phase literal"),
            "{what}: the phase is written as planned"
        );
    }
}
