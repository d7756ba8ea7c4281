//! Disruptive prober tests: they freeze the workspace storage, break the container runtime
//! and stop the API server, so they hold the cluster lock exclusively, run one at a time
//! (`--test-threads 1`, after every other e2e binary) and undo each disruption in a guard.
//! They are ignored by a plain `cargo test`; test-all runs them with `--ignored`.

use lifeguard_e2e::prober as support;

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

const DAEMONSET: &str = "lifeguard-workspace-node";
const MISSING_IMAGE: &str = "lifeguard.local/not-on-any-node:0";

/// Replaces the prober's container args in the DaemonSet (a rolling update of every node's
/// prober).
async fn set_prober_args(client: &kube::Client, args: &[String]) -> anyhow::Result<()> {
    use k8s_openapi::api::apps::v1::DaemonSet;
    use kube::api::{Api, Patch, PatchParams};
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), NAMESPACE);
    let patch = serde_json::json!([
        {"op": "test", "path": "/spec/template/spec/containers/1/name", "value": "prober"},
        {"op": "replace", "path": "/spec/template/spec/containers/1/args", "value": args},
    ]);
    daemonsets
        .patch(
            DAEMONSET,
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(patch)?),
        )
        .await?;
    Ok(())
}

async fn prober_args(client: &kube::Client) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::api::apps::v1::DaemonSet;
    use kube::api::Api;
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), NAMESPACE);
    let ds = daemonsets.get(DAEMONSET).await?;
    let spec = ds.spec.template.spec.unwrap_or_default();
    let prober = spec
        .containers
        .into_iter()
        .find(|c| c.name == "prober")
        .ok_or_else(|| anyhow::anyhow!("no prober container in {DAEMONSET}"))?;
    Ok(prober.args.unwrap_or_default())
}

/// Waits until the prober pod on the probed node runs with `args` and is Ready.
async fn rolled_out(client: &kube::Client, args: &[String]) -> anyhow::Result<()> {
    lifeguard_e2e::poll_until(
        "the prober rolled out on the probed node",
        Duration::from_secs(180),
        || async {
            let pod = prober_pod(client).await?;
            let runs = pod
                .spec
                .as_ref()
                .and_then(|s| s.containers.iter().find(|c| c.name == "prober"))
                .and_then(|c| c.args.clone())
                .unwrap_or_default();
            Ok((runs == args && ready(&pod)).then_some(()))
        },
    )
    .await
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn a_missing_probe_image_is_inconclusive_and_never_taints_the_node() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    healthy_start(&client).await.expect("healthy start");
    let original = prober_args(&client).await.expect("prober args");
    let broken: Vec<String> = original
        .iter()
        .map(|a| match a.starts_with("--probe-image=") {
            true => format!("--probe-image={MISSING_IMAGE}"),
            false => a.clone(),
        })
        .collect();
    assert_ne!(broken, original, "the local overlay names --probe-image");
    set_prober_args(&client, &broken).await.expect("patch");
    let outcome = async {
        rolled_out(&client, &broken).await?;
        let threshold = status()?["settings"]["failureThreshold"]
            .as_u64()
            .unwrap_or(3);
        let series = r#"lifeguard_prober_checks_total{check="container",outcome="unknown"}"#;
        // As many container checks as would make a failing node unhealthy, and one more.
        let seen = lifeguard_e2e::poll_until(
            "container checks with the missing image",
            Duration::from_secs(180),
            || async { Ok(metric(series).ok().filter(|n| *n > threshold as f64)) },
        )
        .await?;
        let s = status()?;
        anyhow::ensure!(s["verdict"] != "unhealthy", "the node was blamed: {s:#}");
        let (code, _, _) = get("/healthz")?;
        anyhow::ensure!(
            code == 200,
            "liveness answered {code} for a fault not the node's"
        );
        let node = node(&client).await?;
        anyhow::ensure!(
            condition(&node).is_none_or(|c| c.0 != "False"),
            "node condition {:?}",
            condition(&node)
        );
        anyhow::ensure!(!tainted(&node), "the node was tainted for a missing image");
        let error = s["checks"]["container"]["last"]["error"].to_string();
        println!("{seen} inconclusive container checks; last: {error}");
        Ok(())
    }
    .await;
    set_prober_args(&client, &original).await.expect("restore");
    rolled_out(&client, &original)
        .await
        .expect("restored rollout");
    healthy_start(&client).await.expect("healthy again");
    outcome.expect("missing probe image");
}

/// Where the probed node (its own mount namespace) has the workspace disk: the path the
/// prober's DaemonSet names.
const NODE_STORAGE: &str = "/var/lib/lifeguard-cluster/workspace-storage";

/// The probed node as it is before its workspace disk is mounted, until dropped: the
/// storage path is a plain directory of the node's root filesystem, shared (as a systemd
/// host's mounts are), so that a disk mounted on it later propagates to containers. Made
/// inside the node's mount namespace; the disk itself stays mounted on the machine, and
/// "mounting" it binds that same mount (one filesystem, never two mounts of one image).
struct DiskNotYetMounted;

impl DiskNotYetMounted {
    fn new() -> anyhow::Result<Self> {
        in_probed_node(&format!(
            "umount -l {NODE_STORAGE} && mount --bind {NODE_STORAGE} {NODE_STORAGE} \
             && mount --make-shared {NODE_STORAGE}"
        ))?;
        Ok(Self)
    }

    /// Mounts the disk on the node's storage path, as a late mount would.
    fn mount() -> anyhow::Result<()> {
        in_probed_node(&format!(
            "findmnt -rn -o SOURCE --mountpoint {NODE_STORAGE} | grep -q /dev/loop \
             || mount --bind {STORAGE} {NODE_STORAGE}"
        ))
    }
}

impl Drop for DiskNotYetMounted {
    fn drop(&mut self) {
        if let Err(e) = Self::mount() {
            eprintln!("warning: could not mount the disk on {NODE_STORAGE} again: {e:#}");
        }
    }
}

fn in_probed_node(script: &str) -> anyhow::Result<()> {
    lifeguard_e2e::lifeguard_cluster(&["node", "exec", PROBED_NODE, "sh", "-ec", script])
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn a_prober_started_before_the_disk_is_mounted_sees_the_mount_made_later() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");
    let unmounted = DiskNotYetMounted::new().expect("unmount in the node");
    // A prober that starts now finds the mount point as a plain directory of the root
    // filesystem, where every write would succeed.
    let before = prober_pod(&client).await.expect("prober pod");
    lifeguard_e2e::kill_pod(&client, &before.metadata.name.clone().unwrap_or_default())
        .await
        .expect("delete the prober pod");
    lifeguard_e2e::poll_until(
        "a new prober pod Running",
        Duration::from_secs(120),
        || async {
            let pod = prober_pod(&client).await?;
            Ok((pod.metadata.uid != before.metadata.uid && ready(&pod)).then_some(()))
        },
    )
    .await
    .expect("new prober");
    wait_verdict("unhealthy", interval * 6)
        .await
        .expect("unhealthy while the disk is not mounted");
    let s = status().expect("status");
    assert!(
        s.to_string().contains("is not a mount point"),
        "says why: {s:#}"
    );
    // Mounted after the prober started: HostToContainer propagation brings it in.
    DiskNotYetMounted::mount().expect("mount in the node");
    drop(unmounted);
    let recovered = wait_verdict("healthy", interval * 6)
        .await
        .expect("healthy once the disk is mounted");
    println!("mounted after start: healthy after {recovered:?}");
}
