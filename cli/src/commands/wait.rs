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
use crate::scope::{self, settled_description, with_progress};
use crate::when::human;
use std::io::IsTerminal;

/// The controller refreshes a draining window's status every 2 s.
const POLL: Duration = Duration::from_secs(2);
/// A line at least this often, so a quiet wait does not look hung.
const HEARTBEAT: Duration = Duration::from_secs(30);

/// Where progress goes: on a terminal one line rewritten in place at every poll; else a
/// line when something changes, and a heartbeat.
struct Report {
    tty: bool,
    progress: Progress,
}

impl Report {
    fn show(&mut self, live: String, settled: String, elapsed: Duration) {
        if self.tty {
            let secs = jiff::SignedDuration::from_secs(elapsed.as_secs() as i64);
            eprint!("\r\x1b[2K[{}] {live}", human(secs));
        } else if let Some(line) = self.progress.update(settled, elapsed) {
            eprintln!("{line}");
        }
    }

    /// Ends the rewritten line, so what follows starts on its own.
    fn done(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

/// `node`: wait only until the window reports this node drained.
pub async fn drained(
    client: Client,
    name: &str,
    node: Option<&str>,
    timeout: Duration,
) -> Result<()> {
    let api: Api<MaintenanceWindow> = Api::all(client.clone());
    let started = Instant::now();
    let mut report = Report {
        tty: std::io::stderr().is_terminal(),
        progress: Progress::new(HEARTBEAT),
    };
    let mut last_window = None;
    eprintln!(
        "waiting up to {} for maintenancewindow/{name} to drain{}",
        human(jiff::SignedDuration::try_from(timeout).unwrap_or_default()),
        node.map(|n| format!(" node {n}")).unwrap_or_default()
    );
    loop {
        let (description, settled) = match api.get_opt(name).await {
            Ok(Some(window)) => {
                let now = Timestamp::now();
                let state = drain_state(&window, now);
                let progress = scope::progress(&window);
                let node_done = node.is_some_and(|n| {
                    matches!(state, DrainState::Draining { .. } | DrainState::Drained)
                        && scope::node_drained(&window, n) == Some(true)
                });
                match state {
                    DrainState::Drained => {
                        report.show(
                            describe(&state, now),
                            describe(&state, now),
                            started.elapsed(),
                        );
                        report.done();
                        warn_unconfirmed(&client, &window, now).await;
                        return emit(&format!("maintenancewindow/{name} drained\n"));
                    }
                    _ if node_done => {
                        let line = format!("node {} drained", node.unwrap_or_default());
                        report.show(
                            with_progress(line.clone(), &progress),
                            line,
                            started.elapsed(),
                        );
                        report.done();
                        return emit(&format!(
                            "maintenancewindow/{name} drained node {}\n",
                            node.unwrap_or_default()
                        ));
                    }
                    DrainState::Never(why) => {
                        return Err(Error::Failed(format!(
                            "maintenancewindow {name:?} will not drain: {why}"
                        )));
                    }
                    _ => {}
                }
                let description = with_progress(describe(&state, now), &progress);
                let settled = with_progress(settled_description(&state, now), &progress);
                last_window = Some(window);
                (description, settled)
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
            Err(e) => {
                let line = format!("cannot read the window, retrying: {e}");
                (line.clone(), line)
            }
        };
        report.show(description.clone(), settled, started.elapsed());
        let elapsed = started.elapsed();
        if elapsed >= timeout {
            report.done();
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
