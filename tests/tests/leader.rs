//! Leader election between two controller replicas on the real API server: a standby does
//! not act; when the leader shuts down it releases the Lease and the standby takes over
//! within one lease period (the standby polls a held Lease, it does not watch it). Runs as
//! its own test binary, so no other test shares the controller meanwhile.

use std::process::{Child, Command};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    BUSYBOX_IMAGE, LocalController, apply_crds, send_signal, spawn_controller, wait_for,
    with_namespace,
};
use serde_json::json;

fn spawn(identity: &str, metrics_port: u16) -> anyhow::Result<Child> {
    let args = [
        "--identity",
        identity,
        "--backoff",
        "3s",
        "--lease-seconds",
        "15",
    ]
    .map(String::from);
    let mut args = args.to_vec();
    args.push(format!("--metrics-listen=127.0.0.1:{metrics_port}"));
    spawn_controller(identity, &args)
}

/// Where `local-up` serves the controller's metrics.
const LOCAL_METRICS_PORT: u16 = 8082;

fn terminate(pid: u32) -> anyhow::Result<()> {
    send_signal(pid, "TERM")
}

async fn holder(leases: &Api<Lease>) -> anyhow::Result<Option<String>> {
    Ok(leases
        .get_opt("lifeguard-controller")
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity))
}

async fn is_leader(port: u16) -> bool {
    let out = Command::new("curl")
        .args(["-fsS", &format!("http://127.0.0.1:{port}/metrics")])
        .output();
    out.is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l == "lifeguard_controller_leader 1")
    })
}

async fn wait_until(
    what: &str,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> bool,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    while !check().await {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(())
}

#[tokio::test]
async fn standby_takes_over_when_the_leader_shuts_down() {
    with_namespace("leader", |client, ns| async move {
        apply_crds(&client).await?;
        let leases: Api<Lease> = Api::namespaced(client.clone(), "lifeguard-system");
        let mut local = LocalController::capture()?;
        let main_pid = local.pid;
        let main_holder = holder(&leases).await?.context("nobody holds the Lease")?;

        let mut standby = spawn("e2e-standby", 8092)?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let standby_led = is_leader(8092).await;
        let still_main = holder(&leases).await?;

        // The leader shuts down gracefully and releases the Lease.
        terminate(main_pid)?;
        let takeover = wait_until("standby leads", Duration::from_secs(25), async || is_leader(8092).await).await;
        let new_holder = holder(&leases).await?;

        // The new leader reconciles.
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let ws: Workspace = serde_json::from_value(json!({"metadata": {"name": "frank"},
            "spec": {"podTemplate": {"spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "ide", "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "Never", "command": ["sleep", "3600"]}]}}}}))?;
        workspaces.create(&PostParams::default(), &ws).await?;
        let running = wait_for(&workspaces, "frank", Duration::from_secs(60), "Running", |w| {
            w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running)
        })
        .await;

        // Put the usual controller back (as the leader once the standby leaves).
        let mut restored = local.restart()?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        terminate(standby.id())?;
        let exit = standby.wait()?;
        let handback = wait_until("restored controller leads", Duration::from_secs(25), async || is_leader(LOCAL_METRICS_PORT).await).await;
        // Reap it later without blocking: it outlives this test as the cluster's controller.
        std::mem::drop(restored.stdin.take());

        assert!(!standby_led, "a standby does not lead while the leader renews");
        assert_eq!(still_main.as_deref(), Some(main_holder.as_str()));
        takeover?;
        assert_eq!(new_holder.as_deref(), Some("e2e-standby"));
        running?;
        assert!(exit.success(), "graceful shutdown exits 0: {exit}");
        handback?;
        Ok(())
    })
    .await;
}
