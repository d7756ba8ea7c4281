//! Benchmark: what one call on a Workspace costs the API server and etcd: a write of its
//! status by the way it is written, and a read. A start through lifeguard writes the status three times (`Creating`,
//! the node once bound, `Running`), and the mass-start bench found the API server's CPU per
//! start to be what bounds the creation rate. The controller writes by server-side apply
//! (`lifeguard_runtime::status::apply`), which the API server merges field by field against
//! the CRD's schema; this measures that against the two other ways the same status could be
//! written: a JSON merge patch, and a replace (PUT) of the object as last read. Beside
//! them, the read each reconcile makes (a GET, from etcd) and the same read served from the
//! API server's watch cache (`resourceVersion=0`), which the controller does not use.
//!
//!   cargo run --release -p lifeguard-e2e --bin bench-workspace-call-cost -- [N] [ROUNDS]
//!
//! Defaults: N = 300 Workspaces, 5 rounds. Needs `./local-up`. Scales the controller to 0
//! for the run (so only this bench writes the Workspaces, which get no pods) and back to
//! what it was at the end, in a fresh namespace it removes afterwards (`KEEP=1` keeps it).
//! Each round writes every Workspace's status once in each way and reads each once in each
//! way, 16 calls in flight, the ways in a rotating order, and reads kube-apiserver's and etcd's CPU time from /proc
//! around each batch. Every write changes the status (a start's `Creating` to `Running` and
//! back), as the controller's do. Prints, per way, the median over rounds of CPU
//! milliseconds per call and calls per second, and the ratios to apply.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Client;
use kube::api::{Api, DeleteParams, GetParams, Patch, PatchParams, PostParams};
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};
use lifeguard_e2e::{BUSYBOX_IMAGE, LIFEGUARD_NAMESPACE, cpu_tally, poll_until, unique_name};
use serde_json::json;

const IN_FLIGHT: usize = 16;
const CONTROLLER: &str = "lifeguard-controller";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Way {
    Apply,
    MergePatch,
    Replace,
    Get,
    GetCached,
}

impl Way {
    const ALL: [Way; 5] = [
        Way::Apply,
        Way::MergePatch,
        Way::Replace,
        Way::Get,
        Way::GetCached,
    ];

    fn writes(self) -> bool {
        !matches!(self, Way::Get | Way::GetCached)
    }

    fn name(self) -> &'static str {
        match self {
            Way::Apply => "server-side apply",
            Way::MergePatch => "merge patch",
            Way::Replace => "replace (PUT)",
            Way::Get => "GET",
            Way::GetCached => "GET from the cache",
        }
    }
}

/// A start's status, `Creating` (bound to a node, not Ready) or `Running` (Ready): the
/// shape the controller writes, with the same fields set.
fn status(name: &str, running: bool, now: Timestamp) -> WorkspaceStatus {
    let condition = |type_: &str, status: bool, reason: &str, message: &str| Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: Some(1),
        last_transition_time: Time(now),
    };
    WorkspaceStatus {
        phase: Some(if running {
            WorkspacePhase::Running
        } else {
            WorkspacePhase::Creating
        }),
        pod_name: Some(format!("{name}-pod")),
        node_name: Some("lifeguard-sim-1".into()),
        pod_starts: 1,
        conditions: vec![
            condition(
                "Ready",
                running,
                if running { "PodReady" } else { "PodNotReady" },
                "the workspace pod's containers are ready",
            ),
            condition(
                "Starting",
                !running,
                if running { "Started" } else { "PodStarting" },
                "the pod is bound to a node and its containers are being created",
            ),
        ],
        observed_generation: Some(1),
        pod_ready_time: running.then_some(Time(now)),
        ..WorkspaceStatus::default()
    }
}

/// One batch: every Workspace's status written once in `way`. Returns the CPU seconds of
/// kube-apiserver and etcd and the wall time.
async fn batch(
    api: &Api<Workspace>,
    stored: &mut BTreeMap<String, Workspace>,
    way: Way,
    running: bool,
) -> anyhow::Result<(f64, f64, Duration)> {
    let now = Timestamp::now();
    let cpu = cpu_tally::Measure::start();
    let started = Instant::now();
    let written: Vec<Workspace> = stream::iter(stored.values().cloned())
        .map(|ws| async move {
            let name = ws
                .metadata
                .name
                .clone()
                .context("a Workspace without a name")?;
            let status = status(&name, running, now);
            let written = match way {
                Way::Apply => {
                    lifeguard_runtime::status::apply(api, &name, CONTROLLER, &status).await?
                }
                Way::MergePatch => {
                    let patch = Patch::Merge(json!({ "status": status }));
                    api.patch_status(&name, &PatchParams::default(), &patch)
                        .await?
                }
                Way::Replace => {
                    let mut ws = ws;
                    ws.status = Some(status);
                    api.replace_status(&name, &PostParams::default(), &ws)
                        .await?
                }
                Way::Get => api.get(&name).await?,
                Way::GetCached => api.get_with(&name, &GetParams::any()).await?,
            };
            anyhow::Ok(written)
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    let wall = started.elapsed();
    let spent = cpu.seconds();
    // A read changes nothing, and one from the cache may be older than the last write.
    for ws in written.into_iter().filter(|_| way.writes()) {
        if let Some(name) = ws.metadata.name.clone() {
            stored.insert(name, ws);
        }
    }
    let of = |program| spent.get(program).copied();
    match (of("kube-apiserver"), of("etcd")) {
        (Some(apiserver), Some(etcd)) => Ok((apiserver, etcd, wall)),
        _ => anyhow::bail!("kube-apiserver and etcd must run on this machine (./local-up)"),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

async fn scale_controller(client: &Client, replicas: i32) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
    deployments
        .patch_scale(CONTROLLER, &PatchParams::default(), &patch)
        .await?;
    poll_until(
        &format!("{replicas} controller replicas"),
        Duration::from_secs(120),
        || async {
            let d = deployments.get(CONTROLLER).await?;
            let status = d.status.unwrap_or_default();
            let running = status.replicas.unwrap_or(0);
            let ready = status.ready_replicas.unwrap_or(0);
            Ok((running == replicas && (replicas == 0 || ready == replicas)).then_some(()))
        },
    )
    .await
}

async fn run(client: &Client, ns: &str, n: usize, rounds: usize) -> anyhow::Result<()> {
    lifeguard_e2e::create_usable_namespace(client, ns, &[]).await?;
    let api: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let api_ref = &api;
    let created: Vec<Workspace> = stream::iter(0..n)
        .map(|i| async move {
            let ws: Workspace = serde_json::from_value(json!({
                "metadata": {"name": format!("ws-{i:05}")},
                "spec": {"podTemplate": {"spec": {"containers": [
                    {"name": "ide", "image": BUSYBOX_IMAGE, "command": ["sleep", "infinity"]}
                ]}}}
            }))?;
            anyhow::Ok(api_ref.create(&PostParams::default(), &ws).await?)
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    let mut stored: BTreeMap<String, Workspace> = created
        .into_iter()
        .filter_map(|ws| Some((ws.metadata.name.clone()?, ws)))
        .collect();
    println!("Workspace calls: {n} Workspaces in {ns}, {rounds} rounds, {IN_FLIGHT} in flight");
    // Every way once first, so no way measures the status's first write.
    let mut running = false;
    for way in Way::ALL {
        batch(&api, &mut stored, way, running).await?;
        running ^= way.writes();
    }
    let mut cpu: BTreeMap<Way, Vec<f64>> = BTreeMap::new();
    let mut rate: BTreeMap<Way, Vec<f64>> = BTreeMap::new();
    for round in 0..rounds {
        let mut line = Vec::new();
        for k in 0..Way::ALL.len() {
            let way = Way::ALL[(round + k) % Way::ALL.len()];
            let (apiserver, etcd, wall) = batch(&api, &mut stored, way, running).await?;
            running ^= way.writes();
            let ms_per_call = (apiserver + etcd) * 1000.0 / n as f64;
            let per_second = n as f64 / wall.as_secs_f64();
            cpu.entry(way).or_default().push(ms_per_call);
            rate.entry(way).or_default().push(per_second);
            line.push(format!(
                "{} {ms_per_call:.2} ms/call (kube-apiserver {:.2}, etcd {:.2}), {per_second:.0}/s",
                way.name(),
                apiserver * 1000.0 / n as f64,
                etcd * 1000.0 / n as f64
            ));
        }
        println!("round {}: {}", round + 1, line.join("; "));
    }
    let apply_cpu = median(cpu[&Way::Apply].clone());
    println!(
        "medians over {rounds} rounds (kube-apiserver + etcd CPU per call, calls per second):"
    );
    for way in Way::ALL {
        let m = median(cpu[&way].clone());
        println!(
            "  {:<18} {m:.2} ms/call ({:.2} of apply), {:.0}/s",
            way.name(),
            m / apply_cpu,
            median(rate[&way].clone())
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(300);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);
    anyhow::ensure!(
        n >= 1 && rounds >= 1,
        "usage: bench-workspace-call-cost [N >= 1] [ROUNDS >= 1]"
    );
    let client = lifeguard_e2e::client().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let replicas = deployments
        .get(CONTROLLER)
        .await?
        .spec
        .replicas
        .unwrap_or(1);
    scale_controller(&client, 0).await?;
    let ns = unique_name("bench-ws-calls");
    let result = run(&client, &ns, n, rounds).await;
    // Whatever happened: the controller back first, then the namespace.
    let restored = scale_controller(&client, replicas).await;
    if std::env::var_os("KEEP").is_none() {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        // The Workspaces hold the controller's finalizer: the restored controller removes
        // it as the namespace deletes them.
        if let Err(error) = namespaces.delete(&ns, &DeleteParams::default()).await {
            eprintln!("could not delete namespace {ns}: {error}");
        }
    }
    result.and(restored)
}
