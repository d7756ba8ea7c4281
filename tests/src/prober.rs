//! Shared by the prober's end-to-end tests: the installed prober on one node (a DaemonSet
//! pod on the node's pod network), that node's workspace storage (a loop-mounted ext4
//! image, see cluster/node.sh) and guards that undo every disruption, also on failure.
//! The other nodes are left alone: what these tests break is one node's.

use std::fs::File;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use serde_json::Value;

/// The node whose prober and storage these tests use.
pub const PROBED_NODE: &str = "lifeguard-node-1";
/// That node's workspace disk as this machine sees it; inside the node it is mounted at
/// /var/lib/lifeguard-cluster/workspace-storage, the path the prober's DaemonSet names.
pub const STORAGE: &str = "/var/lib/lifeguard-cluster/nodes/lifeguard-node-1/workspace-storage";
pub const NAMESPACE: &str = "lifeguard-system";
/// Where the prober creates its throwaway pods (its `--probe-namespace` default).
pub const PROBE_NAMESPACE: &str = "lifeguard-probes";
pub const DAEMONSET_SELECTOR: &str = "app.kubernetes.io/name=lifeguard-workspace-node";
pub const CONDITION: &str = "LifeguardProbesHealthy";
pub const TAINT: &str = "lifeguard.dev/unhealthy";
const LOCK: &str = "/tmp/lg/cluster.lock";
const LOCK_WAIT: Duration = Duration::from_secs(600);

/// The cluster-wide test lock: shared for tests that only look, exclusive for tests that
/// make the node unhealthy (a taint would keep other tests' pods from scheduling).
/// `LIFEGUARD_E2E_CLUSTER_LOCK=off` skips it, for when the lock is known to be stale (a
/// process that inherited a holder's descriptor keeps it). Rust opens files close-on-exec,
/// so the processes these tests start never inherit it.
pub fn cluster_lock(exclusive: bool) -> anyhow::Result<File> {
    std::fs::create_dir_all("/tmp/lg")?;
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK)?;
    if std::env::var("LIFEGUARD_E2E_CLUSTER_LOCK").as_deref() == Ok("off") {
        eprintln!("warning: not taking {LOCK} (LIFEGUARD_E2E_CLUSTER_LOCK=off)");
        return Ok(file);
    }
    // Bounded: a holder that never lets go fails the test with a reason, not a hang.
    let started = Instant::now();
    loop {
        let attempt = if exclusive {
            file.try_lock()
        } else {
            file.try_lock_shared()
        };
        match attempt {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(std::fs::TryLockError::WouldBlock) => bail!(
                "{LOCK} still held after {LOCK_WAIT:?}; if its holder is a process that \
                 inherited the descriptor (see /proc/locks), set LIFEGUARD_E2E_CLUSTER_LOCK=off"
            ),
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
    }
    Ok(file)
}

/// The running prober pod on [`PROBED_NODE`] that is not being deleted, as (name, pod IP),
/// read with kubectl (a replaced pod has a new name and IP).
fn running_prober() -> anyhow::Result<(String, String)> {
    let kubeconfig =
        std::env::var("KUBECONFIG").unwrap_or_else(|_| crate::LOCAL_KUBECONFIG.to_string());
    let out = Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .args([
            "-n",
            NAMESPACE,
            "get",
            "pods",
            "-l",
            DAEMONSET_SELECTOR,
            &format!("--field-selector=status.phase=Running,spec.nodeName={PROBED_NODE}"),
            "-o",
            "jsonpath={range .items[*]}{.metadata.deletionTimestamp}/{.metadata.name}/{.status.podIP}{\"\\n\"}{end}",
        ])
        .output()
        .context("running kubectl")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.strip_prefix('/')?.split_once('/'))
        .find(|(_, ip)| !ip.is_empty())
        .map(|(name, ip)| (name.to_string(), ip.to_string()))
        .with_context(|| {
            format!(
                "no running prober pod with an IP: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// `http://<pod IP>:8089` of the prober pod that runs now, reached over the node's pod
/// bridge, as the kubelet's probes reach it.
pub fn ops() -> anyhow::Result<String> {
    let (_, ip) = running_prober()?;
    Ok(format!("http://{ip}:8089"))
}

/// GET on the prober's port: (status code, body, time taken).
pub fn get(path: &str) -> anyhow::Result<(u16, String, Duration)> {
    get_from(&ops()?, path)
}

/// GET on `base` (from [`ops`], resolved beforehand: while the API server is down the
/// prober's address cannot be looked up, though the pod keeps it).
pub fn get_from(base: &str, path: &str) -> anyhow::Result<(u16, String, Duration)> {
    let started = Instant::now();
    let out = Command::new("curl")
        .args([
            "-s",
            "-m",
            "5",
            "-w",
            "\n%{http_code}",
            &format!("{base}{path}"),
        ])
        .output()
        .context("running curl")?;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", text.as_str()));
    let code = code.trim().parse().unwrap_or(0);
    Ok((code, body.to_string(), took))
}

pub fn status() -> anyhow::Result<Value> {
    let (code, body, _) = get("/status")?;
    if code != 200 {
        bail!("/status answered {code}: {body}");
    }
    Ok(serde_json::from_str(&body)?)
}

pub fn interval() -> anyhow::Result<Duration> {
    let s = status()?;
    let secs = s["settings"]["intervalSeconds"]
        .as_f64()
        .context("/status has no settings.intervalSeconds")?;
    Ok(Duration::from_secs_f64(secs))
}

/// Polls /status until the verdict is `want`; returns how long that took (looking every
/// 100 ms: tests hold this to sub-second bounds).
pub async fn wait_verdict(want: &str, timeout: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    crate::poll_every(
        &format!("verdict {want}"),
        timeout,
        Duration::from_millis(100),
        || async {
            let s = status()?;
            if s["verdict"] == want {
                Ok(Some(started.elapsed()))
            } else {
                bail!("last /status:\n{s:#}")
            }
        },
    )
    .await
}

/// A metric's value from /metrics (exact series text, e.g. `name{label="v"}`).
pub fn metric(series: &str) -> anyhow::Result<f64> {
    let (_, body, _) = get("/metrics")?;
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .with_context(|| format!("no series {series} in /metrics"))
}

pub async fn node(client: &Client) -> anyhow::Result<Node> {
    Ok(Api::<Node>::all(client.clone()).get(PROBED_NODE).await?)
}

/// Our condition on the node: (status, reason, message).
pub fn condition(node: &Node) -> Option<(String, String, String)> {
    let c = node
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == CONDITION)?;
    Some((
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

pub fn tainted(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t.key == TAINT && t.effect == "NoSchedule")
        })
}

/// Polls the node until `check` holds.
pub async fn wait_node(
    client: &Client,
    what: &str,
    timeout: Duration,
    check: impl Fn(&Node) -> bool,
) -> anyhow::Result<Node> {
    let check = &check;
    crate::poll_until(&format!("node {what}"), timeout, || async move {
        let n = node(client).await?;
        if check(&n) {
            Ok(Some(n))
        } else {
            bail!("condition {:?}, tainted {}", condition(&n), tainted(&n))
        }
    })
    .await
}

/// The prober's DaemonSet pod on [`PROBED_NODE`].
pub async fn prober_pod(client: &Client) -> anyhow::Result<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let list = pods
        .list(
            &ListParams::default()
                .labels(DAEMONSET_SELECTOR)
                .fields(&format!("spec.nodeName={PROBED_NODE}")),
        )
        .await?;
    list.items
        .into_iter()
        .find(|p| p.metadata.deletion_timestamp.is_none())
        .context("no prober pod: was ./local-up run?")
}

pub fn restarts(pod: &Pod, container: &str) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == container))
        .map_or(-1, |c| c.restart_count)
}

pub fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Waits for the healthy state every test starts from (an earlier test may still be
/// recovering).
pub async fn healthy_start(client: &Client) -> anyhow::Result<Duration> {
    wait_verdict("healthy", Duration::from_secs(120)).await?;
    wait_node(
        client,
        "healthy and untainted",
        Duration::from_secs(30),
        |n| condition(n).is_some_and(|c| c.0 == "True") && !tainted(n),
    )
    .await?;
    interval()
}

pub fn sh(cmd: &str) -> anyhow::Result<String> {
    let out = Command::new("sh").args(["-c", cmd]).output()?;
    if !out.status.success() {
        bail!(
            "`{cmd}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Makes the workspace storage read-only until dropped.
pub struct ReadOnlyStorage;

impl ReadOnlyStorage {
    pub fn new() -> anyhow::Result<Self> {
        // EBUSY while the prober has a file open for writing: try again in a moment.
        let mut last = None;
        for _ in 0..50 {
            match sh(&format!("mount -o remount,ro {STORAGE}")) {
                Ok(_) => return Ok(Self),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("remount failed")))
    }
}

impl Drop for ReadOnlyStorage {
    fn drop(&mut self) {
        if let Err(e) = sh(&format!("mount -o remount,rw {STORAGE}")) {
            eprintln!("warning: could not make {STORAGE} writable again: {e:#}");
        }
    }
}

/// Freezes the workspace storage (writes block in the kernel) until dropped.
pub struct FrozenStorage;

impl FrozenStorage {
    pub fn new() -> anyhow::Result<Self> {
        sh(&format!("fsfreeze -f {STORAGE}"))?;
        Ok(Self)
    }
}

impl Drop for FrozenStorage {
    fn drop(&mut self) {
        if let Err(e) = sh(&format!("fsfreeze -u {STORAGE}")) {
            eprintln!("warning: could not thaw {STORAGE}: {e:#}");
        }
    }
}

/// Pid of the prober process of the running prober pod on [`PROBED_NODE`], found on this
/// machine (every node's processes are this machine's).
pub fn prober_pid() -> anyhow::Result<u32> {
    let (pod, _) = running_prober()?;
    crate::local_pid(&pod, "lifeguard-prober")
}

pub fn probe_pods_selector() -> &'static str {
    "lifeguard.dev/probe=container"
}

/// The names of the throwaway probe pods of [`PROBED_NODE`]'s prober.
pub async fn probe_pods(client: &Client) -> anyhow::Result<Vec<String>> {
    Ok(probe_pods_whole(client)
        .await?
        .iter()
        .map(|p| p.name_any())
        .collect())
}

/// The throwaway probe pods of [`PROBED_NODE`]'s prober (each is pinned to its node).
pub async fn probe_pods_whole(client: &Client) -> anyhow::Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), PROBE_NAMESPACE);
    Ok(pods
        .list(
            &ListParams::default()
                .labels(probe_pods_selector())
                .fields(&format!("spec.nodeName={PROBED_NODE}")),
        )
        .await?
        .items)
}
