use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::core::PartialObjectMeta;
use kube::{Client, ResourceExt};
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, Workspace};
use tokio::time::Instant;

use super::emit;
use crate::drain::{DrainState, Progress, describe, drain_state, remaining, unconfirmed_disposals};
use crate::error::{Error, Result, status_code};
use crate::when::human;

/// The controller refreshes a draining window's status every 2 s.
const POLL: Duration = Duration::from_secs(2);
/// A line at least this often, so a quiet wait does not look hung.
const HEARTBEAT: Duration = Duration::from_secs(30);

pub async fn drained(client: Client, name: &str, timeout: Duration) -> Result<()> {
    let api: Api<MaintenanceWindow> = Api::all(client.clone());
    let started = Instant::now();
    let mut progress = Progress::new(HEARTBEAT);
    let mut last_window = None;
    eprintln!(
        "waiting up to {} for maintenancewindow/{name} to drain",
        human(jiff::SignedDuration::try_from(timeout).unwrap_or_default())
    );
    loop {
        let description = match api.get_opt(name).await {
            Ok(Some(window)) => {
                let now = Timestamp::now();
                let state = drain_state(&window, now);
                match state {
                    DrainState::Drained => {
                        if let Some(line) =
                            progress.update(describe(&state, now), started.elapsed())
                        {
                            eprintln!("{line}");
                        }
                        warn_unconfirmed(&client, &window, now).await;
                        return emit(&format!("maintenancewindow/{name} drained\n"));
                    }
                    DrainState::Never(why) => {
                        return Err(Error::Failed(format!(
                            "maintenancewindow {name:?} will not drain: {why}"
                        )));
                    }
                    _ => {}
                }
                let description = describe(&state, now);
                last_window = Some(window);
                description
            }
            Ok(None) => {
                return Err(Error::Failed(format!(
                    "maintenancewindow {name:?} not found{}",
                    if last_window.is_some() {
                        " (deleted while waiting)"
                    } else {
                        ""
                    }
                )));
            }
            // A refusal will not change by waiting (RBAC, missing CRD)...
            Err(e) if status_code(&e).is_some_and(|c| (400..500).contains(&c) && c != 429) => {
                return Err(Error::kube(
                    format!("reading maintenancewindow {name:?}"),
                    e,
                ));
            }
            // ... but an API server restart during an upgrade is exactly when one waits.
            Err(e) => format!("cannot read the window, retrying: {e}"),
        };
        if let Some(line) = progress.update(description.clone(), started.elapsed()) {
            eprintln!("{line}");
        }
        let elapsed = started.elapsed();
        if elapsed >= timeout {
            let what = match &last_window {
                Some(window) => what_remains(&client, window).await,
                None => String::new(),
            };
            return Err(Error::Timeout(format!(
                "timed out after {} waiting for maintenancewindow {name:?} to drain: {description}{what}",
                human(jiff::SignedDuration::try_from(elapsed).unwrap_or_default())
            )));
        }
        tokio::time::sleep(POLL.min(timeout - elapsed)).await;
    }
}

/// Names, on stderr, the covered workspaces this drain released without their backup
/// agent confirming the work was saved. Best effort: the drain itself is over.
async fn warn_unconfirmed(client: &Client, window: &MaintenanceWindow, now: Timestamp) {
    let Ok(compiled) = CompiledWindow::compile(window) else {
        return;
    };
    let since = compiled.active_at(now).map_or(now, |o| o.start);
    match covered_workspaces(client).await {
        Ok((workspaces, labels)) => {
            let lost = unconfirmed_disposals(&compiled, &workspaces, &labels, since);
            if !lost.is_empty() {
                eprintln!(
                    "warning: {} workspace(s) released without their work confirmed saved (the work may be lost):",
                    lost.len()
                );
                for line in lost {
                    eprintln!("  {line}");
                }
            }
        }
        Err(e) => eprintln!("warning: cannot check the workspaces' disposals: {e}"),
    }
}

type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

async fn covered_workspaces(
    client: &Client,
) -> std::result::Result<(Vec<Workspace>, NamespaceLabels), kube::Error> {
    let workspaces = Api::<Workspace>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let namespaces = Api::<PartialObjectMeta<Namespace>>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await?;
    let labels = namespaces
        .items
        .into_iter()
        .map(|ns| (ns.name_any(), ns.metadata.labels.unwrap_or_default()))
        .collect();
    Ok((workspaces.items, labels))
}

/// The covered workspaces still running, one per line; best effort, since the caller is
/// already reporting a timeout.
async fn what_remains(client: &Client, window: &MaintenanceWindow) -> String {
    let Ok(compiled) = CompiledWindow::compile(window) else {
        return String::new();
    };
    let workspaces = Api::<Workspace>::all(client.clone())
        .list(&ListParams::default())
        .await;
    let namespaces = Api::<PartialObjectMeta<Namespace>>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await;
    match (workspaces, namespaces) {
        (Ok(workspaces), Ok(namespaces)) => {
            let labels: BTreeMap<String, BTreeMap<String, String>> = namespaces
                .items
                .into_iter()
                .map(|ns| (ns.name_any(), ns.metadata.labels.unwrap_or_default()))
                .collect();
            let left = remaining(&compiled, &workspaces.items, &labels);
            left.iter().map(|w| format!("\n  {w}")).collect()
        }
        (Err(e), _) | (_, Err(e)) => format!("\n  (cannot list the workspaces: {e})"),
    }
}
