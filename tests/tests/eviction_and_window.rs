//! A drain window and an eviction on the same workspace at once, as when a platform team's
//! window and a node upgrade tool's drain overlap: the workspace is stopped once (one pod
//! deletion, one save), the window counts it once, and the window's stop stands: the
//! eviction does not start it again while the window drains.

use std::time::{Duration, Instant};

use jiff::SignedDuration;
use kube::api::{Api, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::names::pod_name;
use lifeguard_api::workspace::condition;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    bind_the_stand_in, close_window, events_about, evict_once, open_window, wait_drained, wait_for,
    wait_phase, with_namespace, workspace,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(180);

#[tokio::test]
async fn a_window_and_an_eviction_at_once_stop_the_workspace_once() {
    with_namespace("eviction-window", |client, ns| async move {
        bind_the_stand_in(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let ws = workspace("both")
            .spec(json!({"confirmDisposal": true}))
            .pod_labels(json!({"disposal-standin": "true"}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &ws).await?;
        wait_phase(&workspaces, "both", WorkspacePhase::Running, TIMEOUT).await?;

        let window = open_window(
            &client,
            &ns,
            SignedDuration::from_mins(30),
            json!({"drain": true, "maxConcurrentDrains": 1}),
            json!({}),
        )
        .await?;
        let outcome = async {
            let (code, message) = evict_once(&ns, &pod_name("both"), false).await?;
            anyhow::ensure!(
                code == 429 || code == 201,
                "the eviction is held or, if the window's stop is already over, let through: \
                 {code} {message}"
            );
            let stopped = wait_for(&workspaces, "both", TIMEOUT, "Stopped", |w| {
                w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Stopped)
            })
            .await?;
            let status = stopped.status.unwrap_or_default();
            let saved = status
                .conditions
                .iter()
                .any(|c| c.type_ == condition::DISPOSAL_CONFIRMED && c.status == "True");
            anyhow::ensure!(saved, "its work was saved: {status:?}");
            anyhow::ensure!(
                status.pod_starts == 1,
                "the window's stop stands; not started again: {status:?}"
            );
            let events = events_about(&client, Some(&ns), "Workspace", "both").await?;
            let deletions = events.iter().filter(|(r, _)| r == "PodDeleted").count();
            let saves = events
                .iter()
                .filter(|(r, _)| r == "DisposalConfirmed")
                .count();
            anyhow::ensure!(
                deletions == 1 && saves == 1,
                "one stop, one save: {events:?}"
            );
            // The window's status follows its survey: once it says Drained, its count is
            // the whole drain's.
            wait_drained(&client, &window, Instant::now(), TIMEOUT).await?;
            let windows: Api<MaintenanceWindow> = Api::all(client.clone());
            let drained = windows
                .get(&window)
                .await?
                .status
                .and_then(|s| s.workspaces_drained);
            anyhow::ensure!(drained == Some(1), "counted once: {drained:?}");
            anyhow::Ok(())
        }
        .await;
        close_window(&client, &window).await;
        outcome
    })
    .await;
}
