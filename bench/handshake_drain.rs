//! The mass drain with the disposal handshake on, for `bench-mass-start`: N Workspaces with
//! `confirmDisposal`, Running on the simulated nodes, drained by a window while this bench
//! plays the nodes' backup agent. The agent holds only the narrow receipts role (reads
//! pods, creates `DisposalReceipt`s, writes no pod), as a platform team's agent would, and
//! answers `Saved` for each stopping pod once the kubelet reports its containers stopped,
//! with no save time of its own: what is timed is lifeguard's handshake, not a backup.
//! Afterwards every Workspace must say `DisposalConfirmed=True`: none released before its
//! agent answered.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use lifeguard_api::receipt::{self, DisposalReceipt, ReceiptResult};
use lifeguard_api::workspace::condition::DISPOSAL_CONFIRMED;
use lifeguard_api::{Workspace, WorkspacePhase, disposal};
use serde_json::{Value, json};

use super::PHASE_TIMEOUT;
use super::mass_drain::{self, Drain};

pub struct HandshakeDrain {
    /// From the first create to every Workspace Running.
    pub all_running: Duration,
    pub drain: Drain,
    /// Receipts the agent made.
    pub receipts: usize,
    /// Workspaces whose pod was released with the agent's `Saved` recorded.
    pub confirmed: usize,
}

/// Whether the agent answers for `pod` now: it is stopping, waits for a confirmation, and
/// none of its containers runs (its work is written; the controller waits for that too).
fn due(pod: &Pod) -> bool {
    let annotations = pod.metadata.annotations.as_ref();
    pod.metadata.deletion_timestamp.is_some()
        && disposal::confirmation_required(annotations)
        && disposal::result(annotations).is_none()
        && !disposal::any_container_running(pod)
}

/// What the agent did: receipts made, and creates that failed (with the first error).
#[derive(Default)]
struct Answers {
    made: AtomicUsize,
    failed: AtomicUsize,
    first_error: std::sync::Mutex<Option<String>>,
}

/// The agent: watches the namespace's pods with its own narrow identity and answers each
/// due pod once, `concurrency` receipts in flight. A failed create is counted and not
/// retried: the controller's confirmation timeout then releases that pod unconfirmed, which
/// the check after the drain reports. Runs until aborted.
fn spawn_agent(
    agent: Client,
    ns: &str,
    concurrency: usize,
    answers: Arc<Answers>,
) -> tokio::task::JoinHandle<()> {
    let pods: Api<Pod> = Api::namespaced(agent.clone(), ns);
    let made: Api<DisposalReceipt> = Api::namespaced(agent, ns);
    tokio::spawn(async move {
        let mut answered = HashSet::new();
        watcher(pods, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .filter_map(move |pod| {
                let first = pod.ok().filter(|pod| {
                    due(pod)
                        && pod
                            .metadata
                            .uid
                            .clone()
                            .is_some_and(|uid| answered.insert(uid))
                });
                std::future::ready(first)
            })
            .map(|pod| {
                let made = made.clone();
                async move {
                    let receipt = receipt::for_pod(&pod, ReceiptResult::Saved, None)
                        .ok_or_else(|| "a pod without name or UID".to_string())?;
                    match made.create(&PostParams::default(), &receipt).await {
                        Ok(_) => Ok(true),
                        // Answered already (a watch restart replays the pod).
                        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                        Err(e) => Err(e.to_string()),
                    }
                }
            })
            .buffer_unordered(concurrency)
            .for_each(|result| {
                match result {
                    Ok(true) => {
                        answers.made.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(false) => {}
                    Err(error) => {
                        answers.failed.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut first) = answers.first_error.lock() {
                            first.get_or_insert(error);
                        }
                    }
                }
                std::future::ready(())
            })
            .await;
    })
}

/// `reason count` of the `DisposalConfirmed` conditions (`none` where there is none).
fn tally_outcomes(workspaces: &[&Workspace]) -> String {
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for ws in workspaces {
        let reason = ws
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == DISPOSAL_CONFIRMED))
            .map_or("none", |c| c.reason.as_str());
        *counts.entry(reason).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(reason, count)| format!("{reason} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn confirmed(ws: &Workspace) -> bool {
    ws.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == DISPOSAL_CONFIRMED && c.status == "True")
    })
}

/// Creates the N Workspaces (`pod_spec` in their template), waits for all to run, then
/// drains them by a window with the agent answering.
pub async fn run(
    client: &Client,
    ns: &str,
    n: usize,
    concurrency: usize,
    pod_spec: Value,
) -> anyhow::Result<HandshakeDrain> {
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let started = Instant::now();
    let pod_spec = &pod_spec;
    let workspaces_ref = &workspaces;
    stream::iter(0..n)
        .map(|i| async move {
            let ws: Workspace = serde_json::from_value(json!({
                "metadata": {"name": format!("wh-{i:05}")},
                "spec": {"confirmDisposal": true,
                         "podTemplate": {"metadata": {"labels": {"app": "bench"}}, "spec": pod_spec}}
            }))?;
            workspaces_ref.create(&PostParams::default(), &ws).await?;
            anyhow::Ok(())
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<()>>()
        .await?;
    lifeguard_e2e::wait_all_in_phase(&workspaces, n, WorkspacePhase::Running, PHASE_TIMEOUT)
        .await?;
    let all_running = started.elapsed();

    let agent_client = lifeguard_e2e::receipts_agent(client).await?;
    let answers = Arc::new(Answers::default());
    let agent = spawn_agent(agent_client, ns, concurrency, answers.clone());
    let drain = mass_drain::drain_by_window(client, ns, n).await;
    agent.abort();
    let failed = answers.failed.load(Ordering::Relaxed);
    if failed > 0 {
        let first = answers.first_error.lock().ok().and_then(|e| e.clone());
        eprintln!("the agent's receipts failed {failed} times; first: {first:?}");
    }
    let drain = drain?;
    let listed = workspaces.list(&ListParams::default()).await?.items;
    let unconfirmed: Vec<&Workspace> = listed.iter().filter(|w| !confirmed(w)).collect();
    anyhow::ensure!(
        unconfirmed.is_empty(),
        "{} of {n} workspaces were released without the agent's confirmation, by the outcome \
         recorded ({}); the first: {:?}. `TimedOut` means no receipt came within the \
         controller's --disposal-confirm-timeout after the containers stopped (40s in the \
         local overlay), or, for a pod whose containers the kubelet had not reported \
         stopped by --disposal-timeout after its deletion time (30s), after that: the agent \
         answers only once the kubelet reports the stop, so a drain that deletes faster \
         than the simulated nodes stop pods can run past both",
        unconfirmed.len(),
        tally_outcomes(&unconfirmed),
        unconfirmed
            .iter()
            .take(10)
            .filter_map(|w| w.metadata.name.as_deref())
            .collect::<Vec<_>>()
    );
    Ok(HandshakeDrain {
        all_running,
        drain,
        receipts: answers.made.load(Ordering::Relaxed),
        confirmed: listed.len(),
    })
}
