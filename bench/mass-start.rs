//! Benchmark: mass start and mass drain. N Workspaces created at once (the end of a
//! maintenance window),
//! their pods placed on simulated nodes (kwok's fake nodes, or kubemark's hollow nodes with
//! `NODES=hollow`), against a baseline measured in the same run:
//! the same N pods created directly by this client with the same concurrency, through the
//! same API server, with lifeguard's webhooks registered (a workspace-labelled pod goes
//! through both, as the controller's pods do).
//!
//!   cluster/lifeguard-cluster fake-nodes up 10 --pods-per-node 110   # room for N pods
//!   cargo run --release -p lifeguard-e2e --bin bench-mass-start -- [N] [CONCURRENCY]
//!   (or hollow-nodes up 3 --max-pods 500, and NODES=hollow)
//!
//! Defaults: N = 1000, CONCURRENCY = 16 (the controller's `--concurrency` default; the bench
//! stops unless the leading controller runs with CONCURRENCY). Needs
//! `./local-up` and enough capacity on the simulated nodes (the bench checks). Reported per phase:
//! pods per second (N / time from the first create to the last pod seen by a watch) and
//! the time until every pod is Running; their ratio (lifeguard / direct, target >= 0.8);
//! the leading controller's peak RSS during the lifeguard phase (sampled every 250 ms) and
//! since it started (`VmHWM`); the API server's requests per pod in each phase, by verb and
//! resource (`apiserver_request_total`), which shows what a start costs it, and the CPU
//! each of this machine's cluster and lifeguard processes spent per pod (`cpu_tally.rs`),
//! which shows who spent the cores. Then the mass drain (`mass_drain.rs`): a window draining
//! the N running workspaces against the N baseline pods deleted directly, both timed to the
//! last pod gone. Last, in a second namespace, the mass drain with the disposal handshake
//! on (`handshake_drain.rs`): N Workspaces with `confirmDisposal`, this bench answering as
//! their backup agent; every one must be released only after its answer (`HANDSHAKE=0`
//! skips it, for the curve's larger points). `KEEP=1` leaves the namespaces behind; a
//! later run refuses to start until they are deleted, and waits until no earlier run's
//! namespace or Workspace is still being deleted, so none of its work lands in the counts. The
//! webhook replicas' memory (now and their peak since they started) ends the start and the
//! drain. `APISERVER_PROFILE=DIR` takes a CPU profile of kube-apiserver at the start of each
//! phase (`apiserver_profile.rs`).

#[path = "apiserver_profile.rs"]
mod apiserver_profile;
#[path = "handshake_drain.rs"]
mod handshake_drain;
#[path = "mass_drain.rs"]
mod mass_drain;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use lifeguard_api::Workspace;
use lifeguard_api::names::CONTROLLER_DEFAULT_CONCURRENCY;
use lifeguard_e2e::{BUSYBOX_IMAGE, Component, cpu_tally, poll_every, poll_until, unique_name};
use serde_json::{Value, json};

/// The simulated nodes the pods go to: their label, which is also their NoSchedule taint.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Nodes {
    /// kwok's fake nodes (`lifeguard-cluster fake-nodes`, cluster/kwok.sh).
    Fake,
    /// kubemark's hollow nodes (`lifeguard-cluster hollow-nodes`, cluster/hollow.sh).
    Hollow,
}

impl Nodes {
    /// `NODES`: `fake` (the default) or `hollow`.
    fn from_env(value: Option<&str>) -> anyhow::Result<Self> {
        match value.map(str::trim) {
            None | Some("" | "fake") => Ok(Self::Fake),
            Some("hollow") => Ok(Self::Hollow),
            Some(other) => anyhow::bail!(
                "NODES={other:?}: use `fake` (kwok's fake nodes, the default) or `hollow` (kubemark's)"
            ),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Fake => "lifeguard.dev/fake",
            Self::Hollow => "lifeguard.dev/hollow",
        }
    }

    /// The command that adds K such nodes with room for P pods each.
    fn up_command(self) -> &'static str {
        match self {
            Self::Fake => "cluster/lifeguard-cluster fake-nodes up K --pods-per-node P",
            Self::Hollow => "cluster/lifeguard-cluster hollow-nodes up K --max-pods P",
        }
    }
}
const WORKSPACE_LABEL: &str = "lifeguard.dev/workspace";
/// The label of every namespace this bench creates (`cluster/hollow-smoke` deletes by it).
const BENCH_LABEL: (&str, &str) = ("lifeguard.dev/bench", "mass-start");
/// The longest any phase may take before the bench gives up.
pub const PHASE_TIMEOUT: Duration = Duration::from_secs(1800);

/// The pod every workspace runs, and the baseline creates directly: pinned to the simulated
/// nodes by their label, tolerating their taint; tiny requests so hundreds fit on a hollow
/// node's fake 1 CPU; no service account token (its TokenRequest would be one more call per
/// pod from the hollow kubelet, whose client is limited to 10 requests/s).
fn pod_spec(nodes: Nodes) -> Value {
    let label = nodes.label();
    json!({
        "nodeSelector": {label: "true"},
        "tolerations": [{"key": label, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        "automountServiceAccountToken": false,
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "ide", "image": BUSYBOX_IMAGE, "imagePullPolicy": "IfNotPresent",
                        "command": ["sleep", "infinity"],
                        "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]
    })
}

/// The `--concurrency` the controller's pod runs with: its `--concurrency` argument, else
/// its `LIFEGUARD_CONCURRENCY` variable, else the default. `None` if that is not a number.
fn controller_concurrency(pod: &Pod) -> Option<usize> {
    let container = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == "controller")
        .or_else(|| pod.spec.as_ref()?.containers.first())?;
    let from_env = || {
        container
            .env
            .as_deref()?
            .iter()
            .rfind(|v| v.name == "LIFEGUARD_CONCURRENCY")?
            .value
            .clone()
    };
    match lifeguard_e2e::arg_value(container, "--concurrency").or_else(from_env) {
        Some(value) => value.parse().ok(),
        None => Some(CONTROLLER_DEFAULT_CONCURRENCY.into()),
    }
}

/// When the watch first saw each pod, and first saw it Running.
#[derive(Default)]
struct Seen {
    created: HashMap<String, Instant>,
    running: HashMap<String, Instant>,
}

/// Watches the namespace's pods into `seen` until dropped.
fn watch_pods(pods: Api<Pod>, seen: Arc<Mutex<Seen>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let events = watcher(pods, watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        // Errors (a watch the API server ended) are retried with backoff by the stream.
        while let Some(event) = events.next().await {
            let pods: Vec<Pod> = match event {
                Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => vec![pod],
                _ => continue,
            };
            let now = Instant::now();
            let Ok(mut seen) = seen.lock() else { return };
            for pod in pods {
                let Some(name) = pod.metadata.name else {
                    continue;
                };
                seen.created.entry(name.clone()).or_insert(now);
                if pod.status.and_then(|s| s.phase).as_deref() == Some("Running") {
                    seen.running.entry(name).or_insert(now);
                }
            }
        }
    })
}

struct Phase {
    /// From the first create to the last create's answer.
    submitted: Duration,
    /// From the first create to the last pod's appearance in the watch.
    pods_created: Duration,
    /// From the first create to the last pod Running.
    all_running: Duration,
    /// The CPU report (`cpu_tally`) from the first create until the watch had seen every
    /// pod (within the 250 ms it polls at): what the creates themselves cost, apart from the
    /// kubelets' work that follows them.
    cpu_while_creating: String,
}

impl Phase {
    fn rate(&self, n: usize) -> f64 {
        n as f64 / self.pods_created.as_secs_f64()
    }
}

/// Retries of one create answered with a server error, before the phase fails.
const CREATE_RETRIES: usize = 3;

fn is_transient(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code >= 500)
}

/// Creates `n` objects with `concurrency` requests in flight, then waits until the watch
/// has seen `n` pods Running.
async fn run_phase<F, Fut>(
    n: usize,
    concurrency: usize,
    seen: &Arc<Mutex<Seen>>,
    cpu: &cpu_tally::Measure,
    create: F,
) -> anyhow::Result<Phase>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let started = Instant::now();
    let retried = std::sync::atomic::AtomicUsize::new(0);
    let create = &create;
    let retried_ref = &retried;
    let failed: Vec<anyhow::Error> = stream::iter(0..n)
        .map(|i| async move {
            // A create the API server answers with 500 (a webhook call that failed, an
            // etcd timeout) is retried, as the controller retries its own, and counted.
            for _ in 0..CREATE_RETRIES {
                match create(i).await {
                    Err(e) if is_transient(&e) => {
                        if retried_ref.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
                            println!("a create retried after: {e:#}");
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    other => return other,
                }
            }
            create(i).await
        })
        .buffer_unordered(concurrency)
        .filter_map(|r| futures::future::ready(r.err()))
        .collect()
        .await;
    if let Some(first) = failed.first() {
        anyhow::bail!("{} creates failed; the first: {first:#}", failed.len());
    }
    let retried = retried.into_inner();
    if retried > 0 {
        println!("{retried} creates retried after a 5xx answer");
    }
    let submitted = started.elapsed();
    let last = |times: &HashMap<String, Instant>| times.values().max().copied();
    let cpu_while_creating = Mutex::new(None);
    let cpu_while_creating_ref = &cpu_while_creating;
    let (created, running) = poll_until(&format!("{n} pods Running"), PHASE_TIMEOUT, || async {
        let seen = seen
            .lock()
            .map_err(|_| anyhow::anyhow!("watch task panicked"))?;
        if seen.created.len() >= n
            && let Ok(mut report) = cpu_while_creating_ref.lock()
            && report.is_none()
        {
            *report = Some(cpu.report(n));
        }
        if seen.running.len() < n {
            anyhow::bail!(
                "{} pods seen, {} Running",
                seen.created.len(),
                seen.running.len()
            );
        }
        Ok(last(&seen.created).zip(last(&seen.running)))
    })
    .await?;
    let cpu_while_creating = cpu_while_creating
        .into_inner()
        .ok()
        .flatten()
        .unwrap_or_else(|| cpu.report(n));
    Ok(Phase {
        submitted,
        pods_created: created.saturating_duration_since(started),
        all_running: running.saturating_duration_since(started),
        cpu_while_creating,
    })
}

/// The controller's reconciles between two readings, per workspace, by action.
fn per_workspace(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
    n: usize,
) -> Vec<String> {
    after
        .iter()
        .filter_map(|(action, after)| {
            let done = after - before.get(action).copied().unwrap_or(0.0);
            (done > 0.0).then(|| format!("{action} {:.2}", done / n as f64))
        })
        .collect()
}

/// The API server's requests since `before`, per pod, largest first: `VERB resource
/// count` for each call made at least once per 20 pods, then the total.
async fn calls_per_pod(
    before: &std::collections::BTreeMap<String, f64>,
    client: &Client,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    let after = lifeguard_e2e::apiserver_requests(client).await?;
    let mut calls: Vec<(String, f64)> = after
        .into_iter()
        .map(|(call, count)| {
            let per_pod = (count - before.get(&call).copied().unwrap_or(0.0)) / n as f64;
            (call, per_pod)
        })
        .collect();
    let total: f64 = calls.iter().map(|(_, c)| c).sum();
    calls.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut shown: Vec<String> = calls
        .into_iter()
        .filter(|(_, c)| *c >= 0.05)
        .map(|(call, c)| format!("{call} {c:.2}"))
        .collect();
    shown.push(format!("total {total:.2}"));
    Ok(shown)
}

/// A `/proc/<pid>/status` memory field (`VmRSS`, `VmHWM`) in MiB.
fn status_mib(pid: u32, field: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .with_context(|| format!("no {field} in /proc/{pid}/status"))?
        .parse()?;
    Ok(kib / 1024.0)
}

/// Pods the Ready simulated nodes can take, and how many of them there are.
async fn capacity(client: &Client, nodes: Nodes) -> anyhow::Result<(usize, usize)> {
    let api: Api<Node> = Api::all(client.clone());
    let mut room = 0;
    let mut count = 0;
    for node in api
        .list(&ListParams::default().labels(&format!("{}=true", nodes.label())))
        .await?
    {
        let status = node.status.unwrap_or_default();
        let ready = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if !ready {
            continue;
        }
        count += 1;
        let pods = status
            .allocatable
            .and_then(|a| a.get("pods").map(|q| q.0.clone()))
            .and_then(|q| q.parse::<usize>().ok())
            .unwrap_or_default();
        // No DaemonSet pod lands there (cluster/hollow.sh, cluster/kwok.sh), but other pods
        // might.
        room += pods;
    }
    Ok((count, room))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let concurrency: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(16);
    let client = lifeguard_e2e::client().await?;

    let nodes = Nodes::from_env(std::env::var("NODES").ok().as_deref())?;
    let (simulated, room) = capacity(&client, nodes).await?;
    anyhow::ensure!(
        room >= n,
        "{simulated} Ready nodes labelled {}=true take {room} pods, fewer than {n}: `{}` with K x P >= {n}",
        nodes.label(),
        nodes.up_command()
    );
    // Right after a rollout the Lease may be free, or still name the replaced pod until it
    // expires: this waits for a Ready replica to hold it rather than fail the run.
    let (leader_pod, _) = lifeguard_e2e::leader_and_standby(&client).await?;
    let leader = leader_pod.name_any();
    let pid = lifeguard_e2e::local_pid(&leader, "lifeguard-controller")?;
    // The baseline is a client with the controller's concurrency; any other is no
    // comparison.
    let controller = controller_concurrency(&leader_pod);
    anyhow::ensure!(
        controller == Some(concurrency),
        "the leading controller {leader} runs with --concurrency {controller:?}, this run asks for \
         {concurrency}: pass its value, or set it (`kubectl -n lifeguard-system set env \
         deploy/lifeguard-controller LIFEGUARD_CONCURRENCY={concurrency}`)"
    );

    let namespaces: Api<Namespace> = Api::all(client.clone());
    wait_for_earlier_runs(client.clone()).await?;
    let ns = unique_name("bench-mass-start");
    create_namespace(&client, &ns).await?;
    println!(
        "mass start: N = {n}, concurrency {concurrency} (the controller's and this client's), {simulated} nodes labelled {}=true, namespace {ns}",
        nodes.label()
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let profiler = apiserver_profile::Profiler::from_env()?;
    let spec = pod_spec(nodes);
    let mut result = run_both(
        &client,
        &ns,
        &pods,
        (n, concurrency),
        &spec,
        pid,
        profiler.as_ref(),
    )
    .await;
    let mut created = vec![ns];
    let skip_handshake = std::env::var("HANDSHAKE").is_ok_and(|v| v == "0");
    if let (Ok(deleted), false) = (&result, skip_handshake) {
        let deleted = *deleted;
        let ns = unique_name("bench-mass-confirm");
        create_namespace(&client, &ns).await?;
        created.push(ns.clone());
        result = handshake(&client, &ns, n, concurrency, &spec, deleted).await;
    }

    if std::env::var_os("KEEP").is_none() {
        for ns in &created {
            println!("cleaning up namespace {ns}");
            namespaces.delete(ns, &DeleteParams::default()).await?;
        }
        for ns in &created {
            poll_until(&format!("namespace {ns} gone"), PHASE_TIMEOUT, || async {
                if namespaces.get_opt(ns).await?.is_some() {
                    anyhow::bail!("still there");
                }
                Ok(Some(()))
            })
            .await?;
        }
    }
    result.map(|_| ())
}

/// Waits until no earlier run's namespace is still being deleted and no Workspace anywhere
/// is still stopping: their PATCHes, Events and LISTs would land in the baseline's counts and
/// flatter the ratios (seen at concurrency 64 after a run's cleanup). A bench namespace that
/// is not being deleted (`KEEP=1`, or a run killed before its cleanup) is an error, since it
/// would never go by itself.
async fn wait_for_earlier_runs(client: Client) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let workspaces: Api<Workspace> = Api::all(client);
    let selector = format!("{}={}", BENCH_LABEL.0, BENCH_LABEL.1);
    let bench = ListParams::default().labels(&selector);
    if let Some(kept) = namespaces
        .list_metadata(&bench)
        .await?
        .items
        .iter()
        .find(|ns| ns.metadata.deletion_timestamp.is_none())
    {
        anyhow::bail!(
            "namespace {} of an earlier run is still there and not being deleted: \
             `kubectl delete namespace -l {selector}`, then rerun",
            kept.name_any()
        );
    }
    // Every 2 s, not 4 times a second: the list of thousands of Workspaces being deleted is
    // the load this waits out, and this wait is not timed.
    poll_every(
        "earlier runs' namespaces and stopping Workspaces gone",
        PHASE_TIMEOUT,
        Duration::from_secs(2),
        || async {
            let earlier = namespaces.list_metadata(&bench).await?.items.len();
            let stopping = workspaces
                .list_metadata(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|ws| ws.metadata.deletion_timestamp.is_some())
                .count();
            if earlier == 0 && stopping == 0 {
                return Ok(Some(()));
            }
            anyhow::bail!(
                "{earlier} namespaces of earlier runs being deleted, {stopping} Workspaces stopping"
            )
        },
    )
    .await
}

/// Each Ready webhook replica's resident memory now and its peak since it started
/// (`VmHWM`), in MiB: the webhook's side of the curve's memory figures.
fn webhook_memory(replicas: &[Pod]) -> String {
    let each: Vec<String> = replicas
        .iter()
        .map(|pod| {
            let name = pod.name_any();
            match lifeguard_e2e::local_pid(&name, "lifeguard-webhook")
                .and_then(|pid| Ok((status_mib(pid, "VmRSS")?, status_mib(pid, "VmHWM")?)))
            {
                Ok((rss, hwm)) => format!("{name} {rss:.1} MiB now, peak {hwm:.1} MiB"),
                Err(e) => format!("{name}: {e}"),
            }
        })
        .collect();
    each.join("; ")
}

/// A fresh namespace for one phase, once pods can be created in it.
async fn create_namespace(client: &Client, ns: &str) -> anyhow::Result<()> {
    // The label lets the test-all smoke (cluster/hollow-smoke) clean up after a failed run.
    let labels = [BENCH_LABEL, (mass_drain::NAMESPACE_LABEL, ns)];
    lifeguard_e2e::create_usable_namespace(client, ns, &labels).await
}

/// The mass drain with the disposal handshake on, against `deleted`: the same number of
/// pods deleted directly in the first namespace.
async fn handshake(
    client: &Client,
    ns: &str,
    n: usize,
    concurrency: usize,
    spec: &Value,
    deleted: Duration,
) -> anyhow::Result<Duration> {
    println!(
        "mass drain with the disposal handshake: {n} Workspaces with confirmDisposal, namespace {ns}"
    );
    let calls_before = lifeguard_e2e::apiserver_requests(client).await?;
    let cpu = cpu_tally::Measure::start();
    let run = handshake_drain::run(client, ns, n, concurrency, spec.clone()).await?;
    let cpu = cpu.report(n);
    let calls = calls_per_pod(&calls_before, client, n).await?;
    println!(
        "handshake drain: {n} Running after {:.1?}; a drain window, this bench answering as the backup agent: Drained after {:.1?}, all pods gone after {:.1?}; {} receipts, {} of {n} DisposalConfirmed=True (none released unconfirmed)",
        run.all_running, run.drain.drained, run.drain.pods_gone, run.receipts, run.confirmed
    );
    println!(
        "ratio (direct / lifeguard with the handshake): time until all pods gone {:.2}",
        deleted.as_secs_f64() / run.drain.pods_gone.as_secs_f64()
    );
    println!(
        "API server requests per workspace, from the first create to the last pod gone: {}",
        calls.join(", ")
    );
    println!("CPU per workspace, from the first create to the last pod gone: {cpu}");
    Ok(deleted)
}

/// When a phase ran, to the second, for `bench/apiserver-audit-report SINCE UNTIL`: who
/// made the requests the phase counted (docs/local-cluster.md).
fn print_phase(name: &str, since: jiff::Timestamp) {
    println!("phase {name}: {since:.0} to {:.0}", jiff::Timestamp::now());
}

async fn run_both(
    client: &Client,
    ns: &str,
    pods: &Api<Pod>,
    (n, concurrency): (usize, usize),
    spec: &Value,
    pid: u32,
    profiler: Option<&apiserver_profile::Profiler>,
) -> anyhow::Result<Duration> {
    // Baseline: the same pods, created directly.
    let calls_before = lifeguard_e2e::apiserver_requests(client).await?;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let watch = watch_pods(pods.clone(), seen.clone());
    let cpu = cpu_tally::Measure::start();
    let since = jiff::Timestamp::now();
    let profile = apiserver_profile::start(profiler, "direct-start");
    let direct = run_phase(n, concurrency, &seen, &cpu, |i| {
        let pods = pods.clone();
        let spec = spec.clone();
        async move {
            let name = format!("direct-{i:05}");
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {WORKSPACE_LABEL: name, "app": "bench"}},
                "spec": spec
            }))?;
            pods.create(&PostParams::default(), &pod).await?;
            Ok(())
        }
    })
    .await?;
    watch.abort();
    let direct_cpu = cpu.report(n);
    apiserver_profile::finish(profile).await;
    let direct_calls = calls_per_pod(&calls_before, client, n).await?;
    print_phase("direct-start", since);
    println!(
        "direct:    {n} pods accepted in {:.1?}, {:.1} pods/s; all Running after {:.1?}",
        direct.pods_created,
        direct.rate(n),
        direct.all_running
    );
    let names = mass_drain::unfinalize_all(pods, concurrency).await?;
    let calls_before = lifeguard_e2e::apiserver_requests(client).await?;
    let cpu = cpu_tally::Measure::start();
    let since = jiff::Timestamp::now();
    let profile = apiserver_profile::start(profiler, "direct-delete");
    let deleted = mass_drain::delete_directly(pods, &names, concurrency).await?;
    let delete_cpu = cpu.report(n);
    apiserver_profile::finish(profile).await;
    let delete_calls = calls_per_pod(&calls_before, client, n).await?;
    print_phase("direct-delete", since);

    // lifeguard: N Workspaces; the controller creates their pods.
    let rss_before = status_mib(pid, "VmRSS")?;
    let peak = Arc::new(Mutex::new(rss_before));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                if let (Ok(rss), Ok(mut peak)) = (status_mib(pid, "VmRSS"), peak.lock()) {
                    *peak = peak.max(rss);
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let reconciles_before = lifeguard_e2e::reconciles_by_action(client).await?;
    let calls_before = lifeguard_e2e::apiserver_requests(client).await?;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let watch = watch_pods(pods.clone(), seen.clone());
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let cpu = cpu_tally::Measure::start();
    let since = jiff::Timestamp::now();
    let profile = apiserver_profile::start(profiler, "lifeguard-start");
    let lifeguard = run_phase(n, concurrency, &seen, &cpu, |i| {
        let workspaces = workspaces.clone();
        let spec = spec.clone();
        async move {
            let ws: Workspace = serde_json::from_value(json!({
                "metadata": {"name": format!("ws-{i:05}")},
                "spec": {"podTemplate": {"metadata": {"labels": {"app": "bench"}}, "spec": spec}}
            }))?;
            workspaces.create(&PostParams::default(), &ws).await?;
            Ok(())
        }
    })
    .await?;
    watch.abort();
    sampler.abort();
    let lifeguard_cpu = cpu.report(n);
    apiserver_profile::finish(profile).await;
    let lifeguard_calls = calls_per_pod(&calls_before, client, n).await?;
    print_phase("lifeguard-start", since);
    let reconciles_after = lifeguard_e2e::reconciles_by_action(client).await?;
    let peak = *peak
        .lock()
        .map_err(|_| anyhow::anyhow!("RSS sampler panicked"))?;
    println!(
        "lifeguard: {n} Workspaces accepted in {:.1?}; their pods created in {:.1?}, {:.1} pods/s; all Running after {:.1?}",
        lifeguard.submitted,
        lifeguard.pods_created,
        lifeguard.rate(n),
        lifeguard.all_running
    );
    println!(
        "ratio (lifeguard / direct): pods created per second {:.2} (target >= 0.8); time until all Running {:.2}",
        lifeguard.rate(n) / direct.rate(n),
        direct.all_running.as_secs_f64() / lifeguard.all_running.as_secs_f64()
    );
    // What the controller did per workspace while starting them: the reconciles that change
    // nothing (idle, wait) each read the Workspace and its pod.
    println!(
        "controller reconciles per workspace during the start: {}",
        per_workspace(&reconciles_before, &reconciles_after, n).join(", ")
    );
    println!(
        "API server requests per pod, from the first create to the last pod Running (every caller: the bench, the controller, the webhook's reads, the scheduler, the kubelets):"
    );
    println!("  direct:    {}", direct_calls.join(", "));
    println!("  lifeguard: {}", lifeguard_calls.join(", "));
    println!(
        "CPU per pod, from the first create to the last pod Running (this machine's processes by program; cores = CPU time / wall time):"
    );
    println!("  direct:    {direct_cpu}");
    println!("  lifeguard: {lifeguard_cpu}");
    println!("CPU per pod, from the first create to the last pod seen (the creates themselves):");
    println!("  direct:    {}", direct.cpu_while_creating);
    println!("  lifeguard: {}", lifeguard.cpu_while_creating);
    println!(
        "controller RSS: {rss_before:.1} MiB before, peak {peak:.1} MiB during the start (sampled every 250 ms), peak since it started (VmHWM) {:.1} MiB",
        status_mib(pid, "VmHWM")?
    );
    let webhooks = lifeguard_e2e::ready_pods(client, Component::Webhook).await?;
    println!(
        "webhook memory after the start: {}",
        webhook_memory(&webhooks)
    );

    let reconciles_before = lifeguard_e2e::reconciles_by_action(client).await?;
    let surveys_before = window_surveys(client).await?;
    let calls_before = lifeguard_e2e::apiserver_requests(client).await?;
    let cpu = cpu_tally::Measure::start();
    let since = jiff::Timestamp::now();
    let profile = apiserver_profile::start(profiler, "lifeguard-drain");
    let drain = mass_drain::drain_by_window(client, ns, n).await?;
    let drain_cpu = cpu.report(n);
    apiserver_profile::finish(profile).await;
    let drain_calls = calls_per_pod(&calls_before, client, n).await?;
    print_phase("lifeguard-drain", since);
    let reconciles_after = lifeguard_e2e::reconciles_by_action(client).await?;
    let surveys_after = window_surveys(client).await?;
    println!(
        "mass drain: {n} pods deleted directly, all gone after {deleted:.1?}; a drain window: Drained after {:.1?}, all pods gone after {:.1?}, {} Stopped",
        drain.drained, drain.pods_gone, drain.stopped
    );
    println!(
        "ratio (direct / lifeguard): time until all pods gone {:.2} (target >= 0.8), until Drained {:.2}",
        deleted.as_secs_f64() / drain.pods_gone.as_secs_f64(),
        deleted.as_secs_f64() / drain.drained.as_secs_f64()
    );
    println!(
        "controller reconciles per workspace during the drain: {}",
        per_workspace(&reconciles_before, &reconciles_after, n).join(", ")
    );
    println!(
        "the window's surveys during the drain, by source: {}",
        surveys_between(&surveys_before, &surveys_after).join(", ")
    );
    println!(
        "API server requests per pod, from the first delete (the window's creation) to the last pod gone:"
    );
    println!(
        "  direct:    {} (not counted: the PATCH a pod that took the webhook's finalizer off first)",
        delete_calls.join(", ")
    );
    println!("  lifeguard: {}", drain_calls.join(", "));
    println!("CPU per pod, from the first delete to the last pod gone:");
    println!("  direct:    {delete_cpu}");
    println!("  lifeguard: {drain_cpu}");
    println!(
        "after the drain: controller RSS {:.1} MiB, peak since it started (VmHWM) {:.1} MiB; webhook memory: {}",
        status_mib(pid, "VmRSS")?,
        status_mib(pid, "VmHWM")?,
        webhook_memory(&webhooks)
    );
    Ok(deleted)
}

/// The controller's surveys so far by source (`watch`, `list`): how many, and the seconds
/// they took in all.
async fn window_surveys(client: &Client) -> anyhow::Result<BTreeMap<String, (f64, f64)>> {
    const SERIES: &str = "lifeguard_controller_window_survey_seconds";
    let counts =
        lifeguard_e2e::controller_series_by_label(client, &format!("{SERIES}_count")).await?;
    let sums = lifeguard_e2e::controller_series_by_label(client, &format!("{SERIES}_sum")).await?;
    Ok(counts
        .into_iter()
        .map(|(source, count)| {
            let sum = sums.get(&source).copied().unwrap_or(0.0);
            (source, (count, sum))
        })
        .collect())
}

/// "watch 412 (0.9 s in all)", one per source, for the surveys between two readings.
fn surveys_between(
    before: &BTreeMap<String, (f64, f64)>,
    after: &BTreeMap<String, (f64, f64)>,
) -> Vec<String> {
    after
        .iter()
        .map(|(source, (count, sum))| {
            let (count_before, sum_before) = before.get(source).copied().unwrap_or((0.0, 0.0));
            format!(
                "{source} {:.0} ({:.1} s in all)",
                count - count_before,
                sum - sum_before
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller_pod(args: &[&str], env: &[(&str, &str)]) -> Pod {
        serde_json::from_value(json!({
            "spec": {"containers": [{
                "name": "controller",
                "args": args,
                "env": env.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
            }]}
        }))
        .unwrap_or_default()
    }

    #[test]
    fn the_simulated_nodes_are_chosen_by_nodes() {
        let cases: [(Option<&str>, Option<&str>); 6] = [
            (None, Some("lifeguard.dev/fake")),
            (Some(""), Some("lifeguard.dev/fake")),
            (Some("fake"), Some("lifeguard.dev/fake")),
            (Some(" hollow "), Some("lifeguard.dev/hollow")),
            (Some("kubemark"), None),
            (Some("Fake"), None),
        ];
        for (value, want) in cases {
            let got = Nodes::from_env(value).ok().map(Nodes::label);
            assert_eq!(got, want, "NODES={value:?}");
        }
        let refused = Nodes::from_env(Some("kwok")).err().map(|e| e.to_string());
        assert!(
            refused.is_some_and(|m| m.contains("`fake`") && m.contains("`hollow`")),
            "an unknown value names the ones that work"
        );
    }

    #[test]
    fn the_controllers_concurrency_is_read_as_its_flags_are() {
        let default = usize::from(CONTROLLER_DEFAULT_CONCURRENCY);
        type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], Option<usize>);
        let cases: [Case; 6] = [
            (&[], &[], Some(default)),
            (&["--concurrency=64"], &[], Some(64)),
            (&["--concurrency", "32"], &[], Some(32)),
            (&[], &[("LIFEGUARD_CONCURRENCY", "48")], Some(48)),
            // The flag wins over the variable, as clap reads them.
            (
                &["--concurrency=8"],
                &[("LIFEGUARD_CONCURRENCY", "48")],
                Some(8),
            ),
            (&[], &[("LIFEGUARD_CONCURRENCY", "many")], None),
        ];
        for (args, env, want) in cases {
            assert_eq!(
                controller_concurrency(&controller_pod(args, env)),
                want,
                "{args:?} {env:?}"
            );
        }
        assert_eq!(controller_concurrency(&Pod::default()), None, "no spec");
    }
}
