//! Benchmark: a rejection storm. N workspaces pinned to one real node start at once while
//! a label their pods select is off the node, so its kubelet rejects every pod (reason
//! NodeAffinity, as after a node label flap); once every workspace has recorded a
//! rejection, the label comes back. Measured: every workspace Running again and none Failed
//! (none lost), the re-creations they took, the time until all Running, and, for each
//! replacement the controller had scheduled when the label came back
//! (`status.nextAttemptTime`), how long after that time the new pod appeared: a storm must
//! not make the controller late on its own backoff schedule.
//!
//!   cargo run -p lifeguard-e2e --bin bench-rejection-storm -- [N]
//!
//! Default N = 40 (the two real nodes take 110 pods each). Needs the local run
//! (`./local-up`); reads the controller's `--backoff` and `--max-retries` from its
//! Deployment. A storm longer than the retry budget fails workspaces by design, so the
//! label comes back as soon as every workspace has been rejected once.

use std::collections::HashMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::names::pod_name;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Component, Rejector, arg_value, declared_container, every_workspace_rejected, node_name,
    poll_until, sleeping_workspace, unique_name,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(300);

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

async fn list(workspaces: &Api<Workspace>) -> anyhow::Result<Vec<Workspace>> {
    Ok(workspaces.list(&ListParams::default()).await?.items)
}

fn median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let mid = v.get(v.len() / 2).copied().unwrap_or(0.0);
    (mid, v.last().copied().unwrap_or(0.0))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(40);
    let client: Client = lifeguard_e2e::client().await?;
    let ns = unique_name("bench-storm");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;
    let node = node_name(&client).await?;
    let rejector = Rejector::new(
        &client,
        &node,
        &format!("lifeguard.dev/{}", unique_name("storm")),
    );
    let outcome = storm(&client, &ns, &rejector, n).await;
    // The label goes (no pod selects it any more), and the namespace with its workspaces.
    let _ = rejector.reject().await;
    let _ = namespaces.delete(&ns, &DeleteParams::background()).await;
    outcome
}

async fn storm(client: &Client, ns: &str, rejector: &Rejector, n: usize) -> anyhow::Result<()> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    poll_until("default service account", TIMEOUT, || async {
        Ok(accounts.get_opt("default").await?.map(|_| ()))
    })
    .await?;
    rejector.reject().await?;
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let started = Timestamp::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let workspaces = workspaces.clone();
            async move {
                let ws = sleeping_workspace(&format!("storm-{i:03}"), rejector)?;
                workspaces.create(&PostParams::default(), &ws).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    every_workspace_rejected(&workspaces, n, TIMEOUT).await?;
    let back = Timestamp::now();
    rejector.admit().await?;
    // The replacements still to come, read after the label is back, by pod name (a time
    // already past may belong to a replacement made meanwhile), and the pods that existed
    // then (a replacement is a pod of that name with another UID).
    let listed = Timestamp::now();
    let scheduled: HashMap<String, Timestamp> = list(&workspaces)
        .await?
        .iter()
        .filter_map(|w| {
            let at = w.status.as_ref()?.next_attempt_time.as_ref()?.0;
            (at > listed).then(|| (pod_name(&w.name_any()), at))
        })
        .collect();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let before: HashMap<String, String> = pods
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
        .collect();
    let mut replaced_at: HashMap<String, Timestamp> = HashMap::new();

    let mut running_at: HashMap<String, Timestamp> = HashMap::new();
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let last = loop {
        let all = list(&workspaces).await?;
        let now = Timestamp::now();
        for p in pods.list(&ListParams::default()).await?.items {
            let name = p.name_any();
            if scheduled.contains_key(&name) && before.get(&name) != p.uid().as_ref() {
                replaced_at.entry(name).or_insert(now);
            }
        }
        for w in &all {
            if phase(w) == Some(WorkspacePhase::Running) {
                running_at.entry(w.name_any()).or_insert(now);
            }
        }
        let failed = all
            .iter()
            .filter(|w| phase(w) == Some(WorkspacePhase::Failed))
            .count();
        if running_at.len() + failed >= n {
            break all;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{} of {n} workspaces Running after {TIMEOUT:?}",
            running_at.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };

    let controller = declared_container(client, Component::Controller).await?;
    let flag = |f: &str| arg_value(&controller, f).unwrap_or_else(|| "(default)".into());
    let failed = last
        .iter()
        .filter(|w| phase(w) == Some(WorkspacePhase::Failed))
        .count();
    let recreated: Vec<u32> = last
        .iter()
        .map(|w| w.status.as_ref().map_or(0, |s| s.pod_recreated))
        .collect();
    let late: Vec<f64> = replaced_at
        .iter()
        .filter_map(|(name, at)| Some(at.duration_since(*scheduled.get(name)?).as_secs_f64()))
        .collect();
    let replaced = late.len();
    let (late_median, late_max) = median(late);
    let all_running = running_at
        .values()
        .max()
        .map_or(0.0, |t| t.duration_since(back).as_secs_f64());
    println!(
        "rejection storm: N = {n} on {}, controller --backoff {} --max-retries {}",
        rejector.node,
        flag("--backoff"),
        flag("--max-retries")
    );
    println!(
        "every workspace rejected once {:.1} s after the first create; label back then",
        back.duration_since(started).as_secs_f64()
    );
    println!(
        "Running again: {} of {n}, Failed (lost): {failed} (target 0); all Running {all_running:.1} s after the label came back",
        running_at.len()
    );
    println!(
        "re-creations per workspace: {} in all, at most {}",
        recreated.iter().sum::<u32>(),
        recreated.iter().max().copied().unwrap_or(0)
    );
    println!(
        "replacements still to come once the label was back: {}; seen created after their scheduled time (polled every 250 ms): {replaced}, median {late_median:.2} s, max {late_max:.2} s",
        scheduled.len()
    );
    anyhow::ensure!(failed == 0, "{failed} workspaces failed in the storm");
    Ok(())
}
