//! Disruptive prober tests: they freeze the workspace storage, break the container runtime
//! and stop the API server, so they hold the cluster lock exclusively, run one at a time
//! (`--test-threads 1`, after every other e2e binary) and undo each disruption in a guard.
//! They are ignored by a plain `cargo test`; test-all runs them with `--ignored`.

#[path = "prober_support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use lifeguard_e2e::client;
use support::*;

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn a_check_hung_on_frozen_storage_is_called_by_the_watchdog() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");

    let frozen = FrozenStorage::new().expect("fsfreeze");
    let detected = wait_verdict("unhealthy", interval * 6)
        .await
        .expect("unhealthy while frozen");
    println!("frozen storage: unhealthy after {detected:?}");
    let s = status().expect("status");
    let error = s["checks"]["volume"]["last"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(error.starts_with("hung:"), "{s:#}");
    // The hung write blocks a thread of its own, never the endpoints.
    let (code, _, took) = get("/healthz").expect("liveness while frozen");
    assert_eq!(code, 503);
    assert!(took < Duration::from_millis(500), "liveness took {took:?}");
    wait_node(&client, "False", Duration::from_secs(15), |n| {
        condition(n).is_some_and(|c| c.0 == "False")
    })
    .await
    .expect("condition False");

    drop(frozen);
    let recovered = wait_verdict("healthy", interval * 3)
        .await
        .expect("healthy after thaw");
    println!("thawed: healthy after {recovered:?}");
}

/// Replaces `runc` (bind-mounted over it) with a wrapper that refuses to create
/// containers and passes everything else to the real one, until dropped. The mount is made
/// inside [`PROBED_NODE`]'s mount namespace, where its containerd runs: a mount on the
/// machine would not reach the node, and the other nodes keep a working runtime.
struct BrokenRuntime {
    target: String,
}

impl BrokenRuntime {
    fn new() -> anyhow::Result<Self> {
        let target = sh("command -v runc")?.trim().to_string();
        anyhow::ensure!(!target.is_empty(), "no runc on PATH");
        sh(&format!("cp -f {target} /tmp/lg/runc.real"))?;
        std::fs::write(
            "/tmp/lg/runc-broken",
            "#!/bin/sh\n\
             for a in \"$@\"; do case $a in create|run) echo 'lifeguard e2e: runtime broken on purpose' >&2; exit 1;; esac; done\n\
             exec /tmp/lg/runc.real \"$@\"\n",
        )?;
        sh("chmod 755 /tmp/lg/runc-broken")?;
        sh(&format!(
            "{} node exec {PROBED_NODE} mount --bind /tmp/lg/runc-broken {target}",
            cluster_script()
        ))?;
        Ok(Self { target })
    }
}

impl Drop for BrokenRuntime {
    fn drop(&mut self) {
        let cmd = format!(
            "{} node exec {PROBED_NODE} umount {}",
            cluster_script(),
            self.target
        );
        if let Err(e) = sh(&cmd) {
            eprintln!("warning: could not restore {}: {e:#}", self.target);
        }
    }
}

fn cluster_script() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../cluster/lifeguard-cluster")
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn a_broken_container_runtime_makes_the_node_unhealthy() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");
    let s = status().expect("status");
    let deadline = s["settings"]["containerDeadlineSeconds"]
        .as_f64()
        .expect("deadline");
    let threshold = s["failureThreshold"].as_u64().expect("threshold") as u32;

    let broken = BrokenRuntime::new().expect("break runc");
    // Each failing run waits out the container deadline.
    let budget = Duration::from_secs_f64(deadline) * (threshold + 1) + interval * 2;
    let detected = wait_verdict("unhealthy", budget).await.expect("unhealthy");
    println!("broken runtime: unhealthy after {detected:?}");
    let s = status().expect("status");
    assert_eq!(
        s["checks"]["container"]["last"]["result"], "failure",
        "{s:#}"
    );
    assert_eq!(s["checks"]["volume"]["last"]["result"], "success", "{s:#}");

    drop(broken);
    let budget = Duration::from_secs_f64(deadline) + interval * 3;
    let recovered = wait_verdict("healthy", budget)
        .await
        .expect("healthy after repair");
    println!("runtime repaired: healthy after {recovered:?}");
}

/// Stops (SIGSTOP) the API server until dropped: connections hang, as with an overloaded
/// or partitioned control plane. A controller replica that loses its Lease meanwhile exits
/// and its container is restarted by the kubelet, as in any cluster.
struct StoppedApiServer {
    pid: u32,
}

impl StoppedApiServer {
    fn new() -> anyhow::Result<Self> {
        let pid: u32 = std::fs::read_to_string("/run/lifeguard-cluster/kube-apiserver.pid")?
            .trim()
            .parse()?;
        send_signal(pid, "STOP")?;
        Ok(Self { pid })
    }
}

impl Drop for StoppedApiServer {
    fn drop(&mut self) {
        if let Err(e) = send_signal(self.pid, "CONT") {
            eprintln!("warning: could not resume the API server: {e:#}");
        }
    }
}

fn send_signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -{signal} {pid} failed");
    Ok(())
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn an_api_server_outage_fails_no_liveness_probe_and_the_verdict_recovers() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");
    let pod = prober_pod(&client).await.expect("pod");
    let restarts_before = (restarts(&pod, "workspace-daemon"), restarts(&pod, "prober"));
    let failed_before =
        metric("lifeguard_prober_liveness_responses_total{code=\"503\"}").expect("metric");

    let ops = ops().expect("the prober's address");
    let outage = StoppedApiServer::new().expect("stop the API server");
    let started = Instant::now();
    let (mut polls, mut failures, mut verdicts) = (0, 0, std::collections::BTreeSet::new());
    while started.elapsed() < Duration::from_secs(60) {
        let (code, body, _) = get_from(&ops, "/healthz").expect("liveness during the outage");
        polls += 1;
        if code != 200 {
            failures += 1;
        }
        verdicts.insert(body);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    drop(outage);
    println!(
        "API server stopped 60 s: {polls} liveness polls, {failures} failures, verdicts {verdicts:?}"
    );
    assert_eq!(failures, 0, "an API outage must not fail liveness");
    assert!(
        verdicts.contains("unknown"),
        "the container check became inconclusive: {verdicts:?}"
    );

    let recovered = wait_verdict("healthy", interval * 6 + Duration::from_secs(30))
        .await
        .expect("healthy once the API server is back");
    println!("API server back: healthy after {recovered:?}");
    let client = lifeguard_e2e::client()
        .await
        .expect("cluster answers again");
    assert_eq!(
        metric("lifeguard_prober_liveness_responses_total{code=\"503\"}").expect("metric"),
        failed_before,
        "the kubelet's probes never saw a 503 either"
    );
    let pod = prober_pod(&client).await.expect("pod");
    assert_eq!(
        (restarts(&pod, "workspace-daemon"), restarts(&pod, "prober")),
        restarts_before,
        "nothing restarted"
    );
}
