//! Advance notice of a drain, against the real cluster: a recurring drain window whose next
//! occurrence opens within two minutes tells the running workspaces it covers (status,
//! condition, Event, and their pod's annotation, which the IDE in the pod reads through a
//! downward API volume), drains them when it opens, and a window whose notice is withdrawn
//! takes it back.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, LogParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::names::MAINTENANCE_NOTICE_ANNOTATION;
use lifeguard_api::notice::MaintenanceNotice;
use lifeguard_api::workspace::condition::MAINTENANCE_SCHEDULED;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    NAMESPACE_LABEL, poll_until, unique_name, wait_for, wait_workspace_events, with_namespace,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(90);
const NOTICE_FILE: &str = "/etc/lifeguard/maintenance-notice";

/// A workspace labelled `notice-e2e=<name>` whose IDE prints the notice file from its
/// downward API volume every second, as an IDE would poll it for a banner.
fn workspace(name: &str) -> anyhow::Result<Workspace> {
    let script = format!(
        "trap 'exit 0' TERM; while true; do echo \"notice: $(cat {NOTICE_FILE} 2>/dev/null)\"; sleep 1; done & wait"
    );
    lifeguard_e2e::workspace(name)
        .labels(json!({"notice-e2e": name}))
        .ide(json!({"command": ["sh", "-c", script],
                    "volumeMounts": [{"name": "lifeguard", "mountPath": "/etc/lifeguard"}]}))
        .pod_spec(json!({"volumes": [{"name": "lifeguard", "downwardAPI": {"items": [{
            "path": "maintenance-notice",
            "fieldRef": {"fieldPath": format!("metadata.annotations['{MAINTENANCE_NOTICE_ANNOTATION}']")}
        }]}}]}))
        .build()
}

fn window(
    name: &str,
    ns: &str,
    covers: &str,
    spec: serde_json::Value,
) -> anyhow::Result<MaintenanceWindow> {
    let mut full = json!({
        "drain": true, "message": format!("e2e notice {name}"),
        "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}},
        "workspaceSelector": {"matchLabels": {"notice-e2e": covers}},
    });
    if let (Some(f), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        f.extend(extra.clone());
    }
    Ok(serde_json::from_value(
        json!({"metadata": {"name": name}, "spec": full}),
    )?)
}

fn notice(ws: &Workspace) -> Option<&MaintenanceNotice> {
    ws.status.as_ref()?.maintenance_notice.as_ref()
}

fn condition(ws: &Workspace) -> Option<(String, String, String)> {
    let c = ws
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == MAINTENANCE_SCHEDULED)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

fn pod_notice(pod: &Pod) -> Option<MaintenanceNotice> {
    let value = pod
        .metadata
        .annotations
        .as_ref()?
        .get(MAINTENANCE_NOTICE_ANNOTATION)?;
    serde_json::from_str(value).ok()
}

#[tokio::test]
async fn a_drain_is_announced_then_drains_and_a_withdrawn_notice_is_taken_back() {
    with_namespace("notice", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        for name in ["ivy", "kim", "lee"] {
            workspaces.create(&PostParams::default(), &workspace(name)?).await?;
        }
        for name in ["ivy", "kim", "lee"] {
            wait_for(&workspaces, name, TIMEOUT, "Running", |w| phase(w) == Some(WorkspacePhase::Running)).await?;
        }

        // "upgrade" recurs daily at a minute 60 to 120 s from now, for one minute, with an
        // hour's notice: ivy is told at once. "later" opens in 90 minutes with two hours'
        // notice: kim is told at once, until the window is deleted. lee is covered by neither.
        let now = Timestamp::now();
        let start = Timestamp::from_second((now.as_second() / 60 + 2) * 60)?;
        let wall = start.to_zoned(jiff::tz::TimeZone::UTC);
        let upgrade = unique_name("e2e-notice-upgrade");
        let later = unique_name("e2e-notice-later");
        windows.create(&PostParams::default(), &window(&upgrade, &ns, "ivy", json!({
            "schedule": format!("{} {} * * *", wall.minute(), wall.hour()),
            "duration": "1m", "notice": "1h",
        }))?).await?;
        windows.create(&PostParams::default(), &window(&later, &ns, "kim", json!({
            "start": (now + SignedDuration::from_mins(90)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "end": (now + SignedDuration::from_mins(120)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "notice": "2h",
        }))?).await?;
        let outcome = announced_drained_withdrawn(&client, &ns, &workspaces, &pods, &windows, &upgrade, &later, start).await;
        for name in [&upgrade, &later] {
            let _ = windows.delete(name, &DeleteParams::default()).await;
        }
        outcome
    })
    .await;
}

#[allow(clippy::too_many_arguments)]
async fn announced_drained_withdrawn(
    client: &kube::Client,
    ns: &str,
    workspaces: &Api<Workspace>,
    pods: &Api<Pod>,
    windows: &Api<MaintenanceWindow>,
    upgrade: &str,
    later: &str,
    start: Timestamp,
) -> anyhow::Result<()> {
    // Announced: status, condition, Event, pod annotation, and the file in the pod.
    let ivy = wait_for(workspaces, "ivy", TIMEOUT, "notified", |w| {
        notice(w).is_some()
    })
    .await?;
    let told = notice(&ivy)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no notice"))?;
    assert_eq!(told.window, upgrade);
    assert_eq!(
        told.start.0, start,
        "the notice names the occurrence's start"
    );
    assert_eq!(
        told.message.as_deref(),
        Some(format!("e2e notice {upgrade}").as_str())
    );
    assert!(Timestamp::now() < start, "told before the drain opens");
    assert_eq!(
        phase(&ivy),
        Some(WorkspacePhase::Running),
        "told while it runs"
    );
    let (status, reason, message) =
        condition(&ivy).ok_or_else(|| anyhow::anyhow!("no condition"))?;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "MaintenanceScheduled")
    );
    assert!(
        message.contains(upgrade) && message.contains("e2e notice"),
        "{message}"
    );
    wait_workspace_events(client, ns, "ivy", &["MaintenanceScheduled"]).await?;
    let pod = poll_until("ivy's pod annotated", TIMEOUT, || async {
        Ok(pods
            .get("ws-ivy")
            .await
            .ok()
            .filter(|p| pod_notice(p).is_some()))
    })
    .await?;
    assert_eq!(pod_notice(&pod), Some(told.clone()));
    let seen_in_pod = poll_until(
        "the notice in the pod's downward API file",
        TIMEOUT,
        || async {
            let logs = pods
                .logs(
                    "ws-ivy",
                    &LogParams {
                        tail_lines: Some(5),
                        ..LogParams::default()
                    },
                )
                .await?;
            Ok(logs
                .lines()
                .rev()
                .find(|l| l.contains(upgrade))
                .map(str::to_owned))
        },
    )
    .await?;
    assert!(seen_in_pod.contains("\"start\""), "{seen_in_pod}");
    let kim = wait_for(workspaces, "kim", TIMEOUT, "notified", |w| {
        notice(w).is_some()
    })
    .await?;
    assert_eq!(notice(&kim).map(|n| n.window.as_str()), Some(later));
    let counted = wait_for(
        windows,
        upgrade,
        TIMEOUT,
        "counting one notified workspace",
        |w| w.status.as_ref().and_then(|s| s.workspaces_notified) == Some(1),
    )
    .await;
    assert!(counted.is_ok(), "{counted:?}");
    let lee = workspaces.get("lee").await?;
    assert_eq!(
        (notice(&lee), condition(&lee)),
        (None, None),
        "an uncovered workspace is not told"
    );

    // Withdrawn: deleting "later" takes kim's notice back, with an Event.
    windows.delete(later, &DeleteParams::default()).await?;
    let kim = wait_for(workspaces, "kim", TIMEOUT, "notice withdrawn", |w| {
        notice(w).is_none()
    })
    .await?;
    let (status, reason, _) = condition(&kim).ok_or_else(|| anyhow::anyhow!("no condition"))?;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "NoticeWithdrawn")
    );
    poll_until("kim's pod annotation removed", TIMEOUT, || async {
        Ok(pods
            .get("ws-kim")
            .await
            .ok()
            .filter(|p| pod_notice(p).is_none()))
    })
    .await?;
    wait_workspace_events(client, ns, "kim", &["NoticeWithdrawn"]).await?;

    // Drained when the occurrence opens, not before; the notice then goes with the workspace.
    let until_open = start.duration_since(Timestamp::now()).unsigned_abs();
    let ivy = wait_for(
        workspaces,
        "ivy",
        until_open + TIMEOUT,
        "Stopped by the drain",
        |w| phase(w) == Some(WorkspacePhase::Stopped),
    )
    .await?;
    assert!(
        Timestamp::now() >= start,
        "stopped only once the drain opened"
    );
    assert_eq!(notice(&ivy), None);
    let (status, reason, _) = condition(&ivy).ok_or_else(|| anyhow::anyhow!("no condition"))?;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "WorkspaceStopped")
    );
    // kim and lee were never drained.
    for name in ["kim", "lee"] {
        assert_eq!(
            phase(&workspaces.get(name).await?),
            Some(WorkspacePhase::Running),
            "{name}"
        );
    }
    Ok(())
}
