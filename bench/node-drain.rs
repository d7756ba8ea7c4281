//! Benchmark: draining one node under a budget. N workspaces run on node 2, each with the
//! disposal handshake answered by the prober's stand-in agent after its save time S; a
//! node-scoped window on node 2 drains them with `maxConcurrentDrains` 1, 4 and unlimited.
//! Reported per budget: time from the window's creation to `Drained`, against the ideal
//! ceil(N / budget) x S, and the overhead per budget slot (target: under 1 s).
//!
//!   cargo run --release -p lifeguard-e2e --bin bench-node-drain -- [N] [S_SECONDS]
//!
//! Defaults: N = 40, S = 3 (the local overlay's `--disposal-standin-save-time`). Needs the
//! local run (`./local-up`).

use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use lifeguard_api::{MaintenanceWindow, Workspace, WorkspacePhase};
use lifeguard_e2e::{
    SECOND_NODE, poll_until, rfc3339, unique_name, wait_all_in_phase, wait_drained, workspace,
};
use serde_json::{Value, json};

const LABEL: &str = "lifeguard.dev/bench-node-drain";

/// N running workspaces on node 2 in a fresh namespace; returns the namespace.
async fn running_on_node_2(client: &Client, n: usize) -> anyhow::Result<String> {
    let ns = unique_name("bench-drain");
    let namespace: Namespace = serde_json::from_value(
        json!({"metadata": {"name": ns, "labels": {LABEL: ns, "lifeguard.dev/e2e": "true"}}}),
    )?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    // Pods that run as the namespace's default service account are refused until it exists.
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), &ns);
    poll_until(
        "default service account",
        Duration::from_secs(60),
        || async {
            let sa = accounts.get_opt("default").await?;
            Ok(sa.map(|_| ()))
        },
    )
    .await?;
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
    for i in 0..n {
        let ws = workspace(&format!("w{i:02}"))
            .spec(json!({"confirmDisposal": true}))
            .pod_labels(json!({"disposal-standin": "true"}))
            .pod_spec(json!({"nodeSelector": {"kubernetes.io/hostname": SECOND_NODE}}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &ws).await?;
    }
    wait_all_in_phase(
        &workspaces,
        n,
        WorkspacePhase::Running,
        Duration::from_secs(600),
    )
    .await?;
    Ok(ns)
}

/// Median and longest seconds of each step of a stop, from the Events on the workspaces (µs event
/// times): pod deleted -> disposal confirmed (grace period, the stand-in's save time and its
/// poll), confirmed -> released, released -> the next workspace's pod deleted (the kubelet
/// removing the pod, `Stopped`, the window starting the next stop). The last step is only
/// meaningful with a budget of 1, where stops follow one another.
async fn step_medians(client: &Client, ns: &str) -> anyhow::Result<[(f64, f64); 3]> {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns);
    let mut at: std::collections::BTreeMap<(String, String), Timestamp> = Default::default();
    for e in events.list(&ListParams::default()).await?.items {
        let (Some(reason), Some(time), Some(name)) = (
            e.reason.clone(),
            e.event_time.as_ref().map(|t| t.0),
            e.regarding.as_ref().and_then(|r| r.name.clone()),
        ) else {
            continue;
        };
        at.insert((name, reason), time);
    }
    let get = |name: &str, reason: &str| at.get(&(name.to_string(), reason.to_string())).copied();
    let mut names: Vec<String> = at.keys().map(|(n, _)| n.clone()).collect();
    names.dedup();
    let mut by_deletion: Vec<(Timestamp, String)> = names
        .iter()
        .filter_map(|n| Some((get(n, "PodDeleted")?, n.clone())))
        .collect();
    by_deletion.sort();
    let secs = |a: Timestamp, b: Timestamp| b.duration_since(a).as_secs_f64();
    // With LIFEGUARD_BENCH_TIMELINE set: each stop's steps from the first deletion, to see
    // where a budget's waves lose time.
    if std::env::var_os("LIFEGUARD_BENCH_TIMELINE").is_some()
        && let Some((first, _)) = by_deletion.first()
    {
        let from =
            |t: Option<Timestamp>| t.map_or("-".to_string(), |t| format!("{:.2}", secs(*first, t)));
        for (deleted, name) in &by_deletion {
            println!(
                "  {name:<12} deleted {:>6}  confirmed {:>6}  released {:>6}",
                from(Some(*deleted)),
                from(get(name, "DisposalConfirmed")),
                from(get(name, "PodReleased")),
            );
        }
    }
    let mut steps: [Vec<f64>; 3] = Default::default();
    for (i, (deleted, name)) in by_deletion.iter().enumerate() {
        let confirmed = get(name, "DisposalConfirmed");
        let released = get(name, "PodReleased");
        if let Some(c) = confirmed {
            steps[0].push(secs(*deleted, c));
        }
        if let (Some(c), Some(r)) = (confirmed, released) {
            steps[1].push(secs(c, r));
        }
        if let (Some(r), Some((next, _))) = (released, by_deletion.get(i + 1)) {
            steps[2].push(secs(r, *next));
        }
    }
    // (median, max): a slow stop now and then (a kubelet waiting for its periodic sync)
    // hides in the median but not in the total.
    Ok(steps.map(|mut v| {
        v.sort_by(f64::total_cmp);
        (
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN),
            v.last().copied().unwrap_or(f64::NAN),
        )
    }))
}

/// Seconds from creating the window to its `Drained` condition.
async fn drain(client: &Client, ns: &str, budget: Option<u32>) -> anyhow::Result<Duration> {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let name = unique_name("bench-drain");
    let now = Timestamp::now();
    let mut spec = json!({
        "start": rfc3339(now - SignedDuration::from_secs(5)),
        "end": rfc3339(now + SignedDuration::from_mins(60)),
        "drain": true,
        "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": SECOND_NODE}},
        "namespaceSelector": {"matchLabels": {LABEL: ns}},
    });
    if let Some(b) = budget {
        spec["maxConcurrentDrains"] = Value::from(b);
    }
    let window: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))?;
    let started = Instant::now();
    windows.create(&PostParams::default(), &window).await?;
    let drained = wait_drained(client, &name, started, Duration::from_secs(1800)).await;
    let _ = windows.delete(&name, &DeleteParams::default()).await;
    drained
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(40);
    let save: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(3.0);
    let client = lifeguard_e2e::client().await?;
    lifeguard_e2e::bind_the_stand_in(&client).await?;
    println!("N = {n} workspaces on {SECOND_NODE}, stand-in save time S = {save} s");
    println!(
        "budget      drained in   ceil(N/b) x S   overhead per slot   steps, median (max): deleted->confirmed, ->released, ->next deleted"
    );
    for budget in [Some(1), Some(4), None] {
        let ns = running_on_node_2(&client, n).await?;
        let took = drain(&client, &ns, budget).await;
        let steps = step_medians(&client, &ns).await;
        let _ = Api::<Namespace>::all(client.clone())
            .delete(&ns, &DeleteParams::default())
            .await;
        let took = took?.as_secs_f64();
        let slots = budget.map_or(1, |b| n.div_ceil(b as usize)) as f64;
        let ideal = slots * save;
        let [confirm, release, next] = steps?;
        println!(
            "{:<11} {:>9.1} s   {:>11.1} s   {:>13.2} s     {:.2} ({:.2}) s, {:.2} ({:.2}) s, {:.2} ({:.2}) s",
            budget.map_or("unlimited".to_string(), |b| b.to_string()),
            took,
            ideal,
            (took - ideal) / slots,
            confirm.0,
            confirm.1,
            release.0,
            release.1,
            next.0,
            next.1,
        );
    }
    Ok(())
}
