//! Benchmark: what one edit of one MaintenanceWindow costs the controller with N
//! Workspaces. The workspace reconciler keeps notices, so a window that can give notice
//! (drain + notice, enforced, not suspended) must make the workspaces it covers (by
//! namespace) look again when its spec changes; any other window's edit moves no notice.
//! Counted here: workspace reconciles (`lifeguard_controller_reconciles_total`, all
//! actions, summed over the controller replicas) per edit, for K edits each of three
//! windows opening tomorrow: one without notice and one with notice, both covering none of
//! the N workspaces' namespace, and one with notice covering it.
//!
//!   cargo run --release -p lifeguard-e2e --bin bench-window-edits -- [N] [K]
//!
//! Defaults: N = 100, K = 5. Needs the local run (`./local-up`).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::{MaintenanceWindow, Workspace};
use lifeguard_e2e::{rfc3339, unique_name, workspace};
use serde_json::json;

/// Workspace reconciles so far, every action, every replica.
async fn reconciles(client: &Client) -> anyhow::Result<f64> {
    Ok(lifeguard_e2e::reconciles_by_action(client)
        .await?
        .values()
        .sum())
}

/// The reconcile count once it has not moved for three looks in a row (1.5 s).
async fn settled(client: &Client) -> anyhow::Result<f64> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    let mut last = reconciles(client).await?;
    let mut still = 0;
    while still < 3 {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "reconciles did not settle in 300 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = reconciles(client).await?;
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    Ok(last)
}

async fn workspaces(client: &Client, n: usize) -> anyhow::Result<String> {
    let ns = unique_name("bench-edits");
    let namespace: Namespace = serde_json::from_value(
        json!({"metadata": {"name": ns, "labels": {"lifeguard.dev/e2e": "true", "lifeguard.dev/bench": ns}}}),
    )?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    let api: Api<Workspace> = Api::namespaced(client.clone(), &ns);
    for i in 0..n {
        // No pod is needed to be reconciled: a pod template no node can take keeps the
        // nodes free, and every Workspace is still the controller's to look at.
        let ws = workspace(&format!("w{i:03}"))
            .pod_spec(json!({"nodeSelector": {"lifeguard.dev/bench": "nowhere"}}))
            .small_requests()
            .build()?;
        api.create(&PostParams::default(), &ws).await?;
    }
    Ok(ns)
}

/// K edits of a window with `spec`; the reconciles each one caused.
async fn edits(client: &Client, spec: serde_json::Value, k: usize) -> anyhow::Result<Vec<f64>> {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let name = unique_name("bench-edit");
    let window: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))?;
    windows.create(&PostParams::default(), &window).await?;
    let mut costs = Vec::new();
    let mut before = settled(client).await?;
    for i in 0..k {
        let patch = json!({"spec": {"message": format!("edit {i}")}});
        windows
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let after = settled(client).await?;
        costs.push(after - before);
        before = after;
    }
    windows.delete(&name, &DeleteParams::default()).await?;
    Ok(costs)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let k: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);
    let client = lifeguard_e2e::client().await?;
    let ns = workspaces(&client, n).await?;
    let covered = json!({"matchLabels": {"lifeguard.dev/bench": ns}});
    let start = Timestamp::now() + SignedDuration::from_hours(24);
    let end = start + SignedDuration::from_hours(1);
    // Covers no namespace of the bench: the cost measured is the signal's, not a drain's.
    let nobody = json!({"matchLabels": {"lifeguard.dev/bench": "nobody"}});
    let outcome = async {
        settled(&client).await?;
        let quiet = edits(
            &client,
            json!({"start": rfc3339(start), "end": rfc3339(end), "namespaceSelector": nobody}),
            k,
        )
        .await?;
        let notifying = edits(
            &client,
            json!({"start": rfc3339(start), "end": rfc3339(end), "namespaceSelector": nobody,
                   "drain": true, "notice": "2h"}),
            k,
        )
        .await?;
        let covering = edits(
            &client,
            json!({"start": rfc3339(start), "end": rfc3339(end), "namespaceSelector": covered,
                   "drain": true, "notice": "2h"}),
            k,
        )
        .await?;
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        println!("workspaces: {n}, edits per window: {k}");
        println!(
            "window without notice: reconciles per edit {quiet:?}, median {}",
            median(&quiet)
        );
        println!(
            "window with drain and notice, covering none: reconciles per edit {notifying:?}, median {}",
            median(&notifying)
        );
        println!(
            "window with drain and notice, covering the {n}: reconciles per edit {covering:?}, median {}",
            median(&covering)
        );
        anyhow::Ok(())
    }
    .await;
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&ns, &DeleteParams::background())
        .await;
    outcome
}
