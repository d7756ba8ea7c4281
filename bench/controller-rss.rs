//! Benchmark: the controller's resident memory with N Workspaces (and so N workspace pods)
//! in the API server. Pods are pinned to a Node object with no kubelet behind it (a pod
//! bound to a missing node would be collected); nothing runs. The bench itself keeps that node Ready (its Ready condition and its Lease, renewed every
//! 10 s, as a kubelet would): a node nobody renews is a lost node, and the controller would
//! force-delete and re-create its pods, so the bench would measure churn, not N quiet
//! workspaces. Once every pod exists, the bench reports each Running and Ready (as the
//! node's kubelet would) and waits until every Workspace says Running, so the quiet minute
//! is N running workspaces. It checks that no pod was replaced while it measured.
//!
//!   cargo run --release -p lifeguard-e2e --bin bench-controller-rss -- [N] [CONTROLLER_PID]
//!
//! Without a pid it measures the leading controller pod's process (found on this machine
//! by its pod name). Prints the controller's RSS before, once every pod exists, once every
//! workspace is Running, its median and maximum over the following quiet minute, and its
//! peak since it started. With `FAILOVER=1` it then deletes the leading controller pod and
//! measures the standby that takes over among the N running workspaces (a controller
//! restarted at scale, as in an upgrade). `KEEP=1` leaves everything in place.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, stream};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use lifeguard_api::Workspace;
use serde_json::json;

const NAMESPACE: &str = "lifeguard-bench-rss";
const NODE: &str = "lifeguard-bench-phantom";

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

fn rss_mib(pid: u32) -> anyhow::Result<f64> {
    status_mib(pid, "VmRSS")
}

/// Runs `results` to the end; fails with how many failed (`what`) and the first error.
async fn all_done(
    results: impl futures::Stream<Item = anyhow::Result<()>>,
    what: &str,
) -> anyhow::Result<()> {
    let failed: Vec<anyhow::Error> = results
        .filter_map(|r| futures::future::ready(r.err()))
        .collect()
        .await;
    match failed.first() {
        Some(first) => anyhow::bail!("{} {what}; the first error: {first:#}", failed.len()),
        None => Ok(()),
    }
}

/// Polls `count` every 5 s until it reaches `n`, and returns what it found then; fails at
/// `deadline`, saying how many `what` there were.
async fn poll_until<T, F, Fut>(
    n: usize,
    deadline: Instant,
    what: &str,
    mut count: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(usize, T)>>,
{
    loop {
        let (have, found) = count().await?;
        if have >= n {
            return Ok(found);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {have} of {n} {what} after 30 min"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// The bench's pods that are not being deleted: `(uid, name)`.
async fn live_pod_uids(pods: &Api<Pod>) -> anyhow::Result<BTreeSet<(String, String)>> {
    let mut uids = BTreeSet::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = pods.list_metadata(&params).await?;
        uids.extend(
            page.items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter_map(|p| Some((p.metadata.uid?, p.metadata.name?))),
        );
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(uids),
        }
    }
}

/// Reports the pod `(uid, name)` Running and Ready, as its kubelet would; the uid is a
/// precondition, so a replacement of the same name is not reported.
async fn report_running(pods: &Api<Pod>, (uid, name): &(String, String)) -> anyhow::Result<()> {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = json!({"metadata": {"uid": uid}, "status": {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "True", "lastTransitionTime": now}],
        "startTime": now,
        "containerStatuses": [{"name": "ide", "ready": true, "started": true, "restartCount": 0,
            "image": lifeguard_e2e::BUSYBOX_IMAGE, "imageID": "",
            "state": {"running": {"startedAt": now}}}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(status))
        .await
        .with_context(|| format!("reporting pod {name} Running"))?;
    Ok(())
}

/// How many of the bench's Workspaces say Running (listed in pages).
async fn running_workspaces(workspaces: &Api<Workspace>) -> anyhow::Result<usize> {
    let mut running = 0;
    let mut params = ListParams::default().limit(500);
    loop {
        let page = workspaces.list(&params).await?;
        running += page
            .items
            .iter()
            .filter(|w| {
                w.status.as_ref().and_then(|s| s.phase)
                    == Some(lifeguard_api::WorkspacePhase::Running)
            })
            .count();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(running),
        }
    }
}

/// Does what a kubelet does to keep its node Ready: the Ready condition's heartbeat and
/// the node's Lease. Returns an error only if the first renewal fails.
async fn keep_node_ready(client: &kube::Client) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let since = jiff::Timestamp::now().to_string();
    let renew = move || {
        let (nodes, leases, since) = (nodes.clone(), leases.clone(), since.clone());
        async move {
            let now = jiff::Timestamp::now().to_string();
            let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
                "reason": "KubeletReady", "message": "kept Ready by bench-controller-rss",
                "lastHeartbeatTime": now, "lastTransitionTime": since}]}});
            nodes
                .patch_status(NODE, &PatchParams::default(), &Patch::Strategic(ready))
                .await
                .context("renewing the phantom node's Ready condition")?;
            let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": NODE},
                "spec": {"holderIdentity": NODE, "leaseDurationSeconds": 40,
                         "renewTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()}});
            leases
                .patch(
                    NODE,
                    &PatchParams::apply("bench-controller-rss").force(),
                    &Patch::Apply(lease),
                )
                .await
                .context("renewing the phantom node's Lease")?;
            anyhow::Ok(())
        }
    };
    renew().await?;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            if let Err(error) = renew().await {
                eprintln!("warning: {error:#}");
            }
        }
    });
    Ok(())
}

/// The leader's pod is deleted, as a node drain or an upgrade would, and the standby takes
/// over among the N running workspaces: it lists them and reconciles each once. Prints the
/// new leader's RSS a minute after it leads, its median and maximum over the two minutes
/// after that, and its peak; returns how many pods were replaced meanwhile.
async fn failover(
    client: &kube::Client,
    pods: &Api<Pod>,
    before: &BTreeSet<(String, String)>,
) -> anyhow::Result<usize> {
    let old = lifeguard_e2e::controller_leader(client)
        .await?
        .context("no controller holds the Lease")?;
    let system: Api<Pod> = Api::namespaced(client.clone(), lifeguard_e2e::LIFEGUARD_NAMESPACE);
    system.delete(&old, &DeleteParams::default()).await?;
    let new = poll_until(
        1,
        Instant::now() + Duration::from_secs(120),
        "new leader",
        || async {
            Ok(match lifeguard_e2e::controller_leader(client).await? {
                Some(leader) if leader != old => (1, leader),
                _ => (0, String::new()),
            })
        },
    )
    .await?;
    let pid = lifeguard_e2e::local_pid(&new, "lifeguard-controller")?;
    println!("failover: {new} leads after {old} was deleted");
    tokio::time::sleep(Duration::from_secs(60)).await;
    println!("new leader's RSS a minute later: {:.1} MiB", rss_mib(pid)?);
    let mut samples = Vec::new();
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        samples.push(rss_mib(pid)?);
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "new leader's RSS over the next two minutes (60 samples): median {:.1} MiB, max {:.1} MiB; peak since start (VmHWM) {:.1} MiB; RssAnon {:.1} MiB, RssFile {:.1} MiB",
        samples[samples.len() / 2],
        samples[samples.len() - 1],
        status_mib(pid, "VmHWM")?,
        status_mib(pid, "RssAnon")?,
        status_mib(pid, "RssFile")?
    );
    let after = live_pod_uids(pods).await?;
    Ok(before.difference(&after).count())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10_000);
    let client = lifeguard_e2e::client().await?;
    let pid: u32 = match args.next() {
        Some(pid) => pid.parse()?,
        None => {
            let leader = lifeguard_e2e::controller_leader(&client)
                .await?
                .context("no controller holds the Lease")?;
            lifeguard_e2e::local_pid(&leader, "lifeguard-controller")?
        }
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    // The last run's clean-up may still be deleting the namespace: creates would be refused.
    let gone_by = Instant::now() + Duration::from_secs(600);
    while let Some(ns) = namespaces.get_opt(NAMESPACE).await? {
        if ns.metadata.deletion_timestamp.is_none() {
            break;
        }
        anyhow::ensure!(
            Instant::now() < gone_by,
            "namespace {NAMESPACE} is still being deleted after 10 min"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    if namespaces.get_opt(NAMESPACE).await?.is_none() {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
        namespaces.create(&PostParams::default(), &ns).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let nodes: Api<Node> = Api::all(client.clone());
    if nodes.get_opt(NODE).await?.is_none() {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": NODE},
            "spec": {"taints": [{"key": "lifeguard.dev/bench", "effect": "NoSchedule"}]}}))?;
        nodes.create(&PostParams::default(), &node).await?;
    }
    keep_node_ready(&client).await?;
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    println!("controller RSS before: {:.1} MiB", rss_mib(pid)?);
    let started = Instant::now();
    let failed = stream::iter(0..n)
        .map(|i| {
            let workspaces = workspaces.clone();
            async move {
                let ws: Workspace = serde_json::from_value(json!({
                    "metadata": {"name": format!("bench-{i:05}"), "labels": {"team": "bench"}},
                    "spec": {"podTemplate": {"metadata": {"labels": {"app": "ide"}}, "spec": {
                        "nodeName": NODE,
                        "containers": [{"name": "ide", "image": lifeguard_e2e::BUSYBOX_IMAGE,
                                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}}
                }))?;
                match workspaces.create(&PostParams::default(), &ws).await {
                    Ok(_) => anyhow::Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                    Err(e) => Err(e.into()),
                }
            }
        })
        .buffer_unordered(16);
    all_done(failed, "Workspaces could not be created").await?;
    println!("{n} Workspaces created in {:.0?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(1800);
    let before = poll_until(n, deadline, "pods", || async {
        let live = live_pod_uids(&pods).await?;
        Ok((live.len(), live))
    })
    .await?;
    println!(
        "{n} pods created by the controller after {:.0?}",
        started.elapsed()
    );
    println!(
        "controller RSS with {n} workspaces and pods: {:.1} MiB",
        rss_mib(pid)?
    );
    // The bench is the phantom node's kubelet: it reports every pod Running and Ready, so
    // the quiet minute is N running workspaces (a pod left creating its containers would
    // also meet its start deadline and be re-created).
    let marked = Instant::now();
    let failed = stream::iter(before.iter().cloned())
        .map(|uid| {
            let pods = pods.clone();
            async move { report_running(&pods, &uid).await }
        })
        .buffer_unordered(16);
    all_done(failed, "pods could not be reported Running").await?;
    poll_until(n, deadline, "workspaces Running", || async {
        Ok((running_workspaces(&workspaces).await?, ()))
    })
    .await?;
    println!(
        "{n} workspaces Running {:.0?} after their pods were reported Running",
        marked.elapsed()
    );
    println!(
        "controller RSS with {n} running workspaces: {:.1} MiB",
        rss_mib(pid)?
    );
    // Periodic passes (sweep, phase count) allocate for a moment; sample the whole minute.
    let mut samples = Vec::new();
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        samples.push(rss_mib(pid)?);
    }
    samples.sort_by(f64::total_cmp);
    let after = live_pod_uids(&pods).await?;
    let replaced = before.difference(&after).count();
    println!(
        "controller RSS over the next quiet minute (30 samples): median {:.1} MiB, max {:.1} MiB; peak since start (VmHWM) {:.1} MiB",
        samples[samples.len() / 2],
        samples[samples.len() - 1],
        status_mib(pid, "VmHWM")?
    );
    // The mapped binary (RssFile) is page cache shared with every process mapping it; the
    // controller's own memory is RssAnon.
    println!(
        "of which RssAnon {:.1} MiB, RssFile {:.1} MiB",
        status_mib(pid, "RssAnon")?,
        status_mib(pid, "RssFile")?
    );

    // Checked after the clean-up, like the quiet minute's result.
    let failed_over = match std::env::var_os("FAILOVER") {
        Some(_) => Some(failover(&client, &pods, &after).await),
        None => None,
    };

    if std::env::var_os("KEEP").is_none() {
        println!("cleaning up (force-deleting pods on the missing node)");
        let _ = namespaces.delete(NAMESPACE, &DeleteParams::default()).await;
        // Always the first page: every pod on it is gone once handled, and a continue token
        // would expire (410) in a clean-up longer than the API server keeps it, leaving the
        // rest, and the node, behind.
        let params = ListParams::default().limit(500);
        // Each round removes up to a page; more rounds than that means pods that stay.
        let mut rounds_left = n / 500 + 20;
        loop {
            let page = pods.list_metadata(&params).await?;
            if page.items.is_empty() {
                break;
            }
            rounds_left = rounds_left.checked_sub(1).with_context(|| {
                format!(
                    "clean-up: {}+ pods in {NAMESPACE} are not going away",
                    page.items.len()
                )
            })?;
            stream::iter(page.items)
                .for_each_concurrent(16, |pod| {
                    let pods = pods.clone();
                    async move {
                        let name = pod.metadata.name.unwrap_or_default();
                        let _ = pods
                            .patch(
                                &name,
                                &PatchParams::default(),
                                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                            )
                            .await;
                        let _ = pods
                            .delete(&name, &DeleteParams::default().grace_period(0))
                            .await;
                    }
                })
                .await;
        }
        let _ = nodes.delete(NODE, &DeleteParams::default()).await;
        let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
        let _ = leases.delete(NODE, &DeleteParams::default()).await;
    }
    // After the clean-up, so a failed check does not leave N workspaces behind.
    if let Some(failed_over) = failed_over {
        let replaced = failed_over.context("failover")?;
        anyhow::ensure!(
            replaced == 0,
            "{replaced} pods were replaced or deleted after the failover"
        );
    }
    anyhow::ensure!(
        replaced == 0 && after.len() == n,
        "the workspaces were not quiet: {replaced} pods were replaced or deleted during the \
         measurement ({} live at the end), so the figures above are not for {n} quiet workspaces",
        after.len()
    );
    Ok(())
}
