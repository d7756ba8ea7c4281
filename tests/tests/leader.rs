//! Leader election between the controller's two replica pods, as installed: exactly one
//! holds the Lease and says so in its metrics, the standby does not act; when the leader's
//! pod is deleted gracefully it releases the Lease and another replica (the standby, or the
//! Deployment's replacement) takes over without waiting for it to expire, and when it is
//! killed (grace 0, as in a crash) once the Lease expires. The Deployment then brings the
//! second replica back. Runs as its own test
//! binary, so no other test shares the controller meanwhile.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Component, apply_crds, controller_leader, http_get, kill_pod, leader_and_standby, metric_value,
    ops_url, pod_says_it_leads, poll_until, ready_pods, stop_pod, wait_for, wait_ready_pods,
    with_namespace, workspace,
};

/// The controller's `--lease-seconds` default, which the install keeps.
const LEASE: Duration = Duration::from_secs(15);

/// Waits until a Ready replica other than `gone` holds the Lease and its metrics say it
/// leads (the standby, or the Deployment's replacement if it was quicker); returns who and
/// how long it took.
async fn takeover(
    client: &Client,
    gone: &str,
    timeout: Duration,
) -> anyhow::Result<(String, Duration)> {
    let started = Instant::now();
    let leader = poll_until(
        &format!("a replica other than {gone} leads"),
        timeout,
        || async move {
            let Some(holder) = controller_leader(client).await? else {
                return Ok(None);
            };
            if holder == gone {
                return Ok(None);
            }
            let pods = ready_pods(client, Component::Controller).await?;
            Ok(pods
                .iter()
                .find(|p| p.name_any() == holder && pod_says_it_leads(p))
                .map(|_| holder))
        },
    )
    .await?;
    Ok((leader, started.elapsed()))
}

async fn reconciles(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let ws = workspace(name).build()?;
    workspaces.create(&PostParams::default(), &ws).await?;
    wait_for(&workspaces, name, Duration::from_secs(60), "Running", |w| {
        w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running)
    })
    .await?;
    Ok(())
}

/// Waits until the leader's `lifeguard_controller_workspaces{phase}` gauge matches the
/// Workspaces the API server lists, phase by phase, over every namespace (nothing else runs
/// in the cluster meanwhile: this binary's tests run alone). The gauge comes from what the
/// leader read and wrote (`controller/src/phase_tally.rs`), not from a list of its own.
async fn phase_gauge_matches(client: &Client, when: &str) -> anyhow::Result<()> {
    let all: Api<Workspace> = Api::all(client.clone());
    let all = &all;
    poll_until(
        &format!("the leader's phase gauge matches the Workspaces ({when})"),
        // Namespaces earlier test binaries deleted may still be stopping workspaces.
        Duration::from_secs(120),
        || async move {
            let Some(holder) = controller_leader(client).await? else {
                return Ok(None);
            };
            let pods = ready_pods(client, Component::Controller).await?;
            let Some(leader) = pods.iter().find(|p| p.name_any() == holder) else {
                return Ok(None);
            };
            let Ok(metrics) = ops_url(leader, Component::Controller)
                .and_then(|url| http_get(&format!("{url}/metrics")))
            else {
                return Ok(None);
            };
            let listed = all.list(&ListParams::default()).await?.items;
            for phase in WorkspacePhase::ALL {
                let want = listed
                    .iter()
                    .filter(|w| w.status.as_ref().and_then(|s| s.phase) == Some(phase))
                    .count() as f64;
                let series = format!(
                    "lifeguard_controller_workspaces{{phase=\"{}\"}}",
                    phase.as_str()
                );
                if metric_value(&metrics, &series).unwrap_or(0.0) != want {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        },
    )
    .await
}

#[tokio::test]
async fn the_standby_replica_takes_over_when_the_leader_pod_goes() {
    with_namespace("leader", |client, ns| async move {
        apply_crds(&client).await?;

        // One leader, one standby that knows it does not lead.
        let (leader, standby) = leader_and_standby(&client).await?;
        assert!(
            pod_says_it_leads(&leader),
            "the Lease holder {} says it leads",
            leader.name_any()
        );
        assert!(
            !pod_says_it_leads(&standby),
            "the standby {} does not lead",
            standby.name_any()
        );

        // Graceful: the leader releases the Lease on SIGTERM, so no expiry is waited for.
        stop_pod(&client, &leader.name_any()).await?;
        let (new_leader, graceful) =
            takeover(&client, &leader.name_any(), LEASE + Duration::from_secs(5))
                .await
                .context("after a graceful stop")?;
        println!(
            "graceful stop: {new_leader} leads after {graceful:?} (the standby was {})",
            standby.name_any()
        );
        reconciles(&client, &ns, "after-stop").await?;
        phase_gauge_matches(&client, "after a graceful stop").await?;

        // Crash: kill the leader outright; its Lease must expire before another takes it.
        let (leader, _) = leader_and_standby(&client).await?;
        kill_pod(&client, &leader.name_any()).await?;
        let (new_leader, crash) = takeover(
            &client,
            &leader.name_any(),
            LEASE * 2 + Duration::from_secs(10),
        )
        .await
        .context("after the leader was killed")?;
        println!("leader killed: {new_leader} leads after {crash:?}");
        reconciles(&client, &ns, "after-kill").await?;
        phase_gauge_matches(&client, "after the leader was killed").await?;

        // The Deployment restores two replicas for the tests that follow.
        wait_ready_pods(&client, Component::Controller, 2, Duration::from_secs(120)).await?;
        Ok(())
    })
    .await;
}
