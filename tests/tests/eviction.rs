//! Evictions of workspace pods through the Eviction API, as `kubectl drain`, node upgrades
//! and autoscalers make them, on the live cluster with lifeguard installed as users
//! install it: the eviction is answered 429 with a message saying what lifeguard does, a
//! dry run changes nothing, the workspace is stopped gracefully, its work confirmed saved by
//! the prober's stand-in agent, and it comes back Running; then a real `kubectl drain`
//! without `--force` of node 2 with three such workspaces on it, each pod told of its stop
//! (annotation `lifeguard.dev/eviction-notice`, Event `EvictionNotice`) before its delete.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use lifeguard_api::eviction::{EvictionNotice, EvictionRecord, REASON_EVICTED};
use lifeguard_api::names::{POD_FINALIZER, WORKSPACE_LABEL, pod_name};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::prober::{PROBED_NODE, cluster_lock};
use lifeguard_e2e::{
    LOCAL_KUBECONFIG, SECOND_NODE, events_about, evict_once, wait_for, wait_phase, with_namespace,
    workspace,
};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(180);

/// A workspace whose disposal the prober's stand-in agent confirms (a 3 s save), started
/// on `node`, then free to go anywhere: the pin is dropped from its spec once it runs, so
/// a re-created pod goes wherever the scheduler puts it.
async fn start_saved(api: &Api<Workspace>, name: &str, node: &str) -> anyhow::Result<Workspace> {
    let ws = workspace(name)
        .spec(json!({"confirmDisposal": true}))
        .pod_labels(json!({"disposal-standin": "true"}))
        .pod_spec(json!({"nodeSelector": {"kubernetes.io/hostname": node}}))
        .small_requests()
        .build()?;
    api.create(&PostParams::default(), &ws).await?;
    let running = wait_phase(api, name, WorkspacePhase::Running, TIMEOUT).await?;
    let unpin = json!({"spec": {"podTemplate": {"spec": {"nodeSelector": null}}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&unpin))
        .await?;
    Ok(running)
}

fn node_of(ws: &Workspace) -> Option<&str> {
    ws.status.as_ref()?.node_name.as_deref()
}

fn recorded(ws: &Workspace) -> Option<EvictionRecord> {
    lifeguard_api::eviction::recorded(ws)
}

fn pod_uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// Running again after the eviction of pod `old_uid`.
fn back_after(ws: &Workspace, old_uid: &str) -> bool {
    ws.status.as_ref().is_some_and(|s| {
        s.phase == Some(WorkspacePhase::Running)
            && s.last_eviction
                .as_ref()
                .is_some_and(|e| e.pod_uid == old_uid)
    })
}

/// When each workspace pod of a namespace was told of its eviction's stop, asked to stop
/// and gone, as a watch sees them (by pod UID), and the most pods held in deletion at once.
#[derive(Default)]
struct PodTimes {
    /// First seen carrying its eviction notice while not yet deleted, with the notice.
    told: BTreeMap<String, (Timestamp, EvictionNotice)>,
    deleting: BTreeMap<String, Timestamp>,
    gone: BTreeMap<String, Timestamp>,
    held: BTreeMap<String, ()>,
    most_held: usize,
}

fn watch_pods(client: &Client, ns: &str) -> (Arc<Mutex<PodTimes>>, tokio::task::JoinHandle<()>) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let times = Arc::new(Mutex::new(PodTimes::default()));
    let tally = times.clone();
    let task = tokio::spawn(async move {
        let config = watcher::Config::default().labels(WORKSPACE_LABEL);
        let mut events = watcher(pods, config).boxed();
        while let Some(event) = events.next().await {
            let Ok(event) = event else { continue };
            let now = Timestamp::now();
            let Ok(mut t) = tally.lock() else { return };
            let (pod, gone) = match event {
                watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => (pod, false),
                watcher::Event::Delete(pod) => (pod, true),
                _ => continue,
            };
            let uid = pod_uid(&pod);
            let deleting = pod.metadata.deletion_timestamp.is_some();
            if !deleting
                && !gone
                && let Some(notice) = EvictionNotice::of(pod.metadata.annotations.as_ref())
            {
                t.told.entry(uid.clone()).or_insert((now, notice));
            }
            if deleting || gone {
                t.deleting.entry(uid.clone()).or_insert(now);
            }
            if gone {
                t.gone.entry(uid.clone()).or_insert(now);
            }
            let held = !gone
                && deleting
                && pod
                    .metadata
                    .finalizers
                    .as_ref()
                    .is_some_and(|f| f.iter().any(|f| f == POD_FINALIZER));
            if held {
                t.held.insert(uid, ());
            } else {
                t.held.remove(&uid);
            }
            t.most_held = t.most_held.max(t.held.len());
        }
    });
    (times, task)
}

/// One workspace's way through an eviction, in seconds after the eviction was first asked.
struct Timeline {
    name: String,
    asked: Timestamp,
    told: Option<Timestamp>,
    stop: Option<Timestamp>,
    saved: Option<Timestamp>,
    gone: Option<Timestamp>,
    running: Option<Timestamp>,
}

impl Timeline {
    fn read(
        ws: &Workspace,
        old_uid: &str,
        times: &PodTimes,
        saved: Option<Timestamp>,
    ) -> anyhow::Result<Self> {
        let status = ws.status.as_ref().context("no status")?;
        let eviction = status.last_eviction.as_ref().context("no lastEviction")?;
        Ok(Self {
            name: ws.metadata.name.clone().unwrap_or_default(),
            asked: eviction.time.0,
            told: times.told.get(old_uid).map(|(at, _)| *at),
            stop: times.deleting.get(old_uid).copied(),
            saved,
            gone: times.gone.get(old_uid).copied(),
            running: status.pod_ready_time.as_ref().map(|t| t.0),
        })
    }

    fn offsets(&self) -> [Option<f64>; 5] {
        let after = |t: Option<Timestamp>| t.map(|t| t.duration_since(self.asked).as_secs_f64());
        [
            after(self.told),
            after(self.stop),
            after(self.saved),
            after(self.gone),
            after(self.running),
        ]
    }
}

fn print_timelines(title: &str, timelines: &[Timeline]) {
    let shown = |v: Option<f64>| v.map_or("-".to_string(), |s| format!("{s:.1}s"));
    eprintln!(
        "{title} (seconds after the eviction was first asked; asked and Running have whole-second resolution):"
    );
    eprintln!(
        "  workspace  asked                 told  stop asked  saved  pod gone  Running elsewhere"
    );
    let mut columns: [Vec<f64>; 5] = Default::default();
    for t in timelines {
        let offsets = t.offsets();
        for (column, value) in columns.iter_mut().zip(offsets) {
            column.extend(value);
        }
        eprintln!(
            "  {:<10} {}  {:>4}  {:>10}  {:>5}  {:>8}  {:>8}",
            t.name,
            t.asked,
            shown(offsets[0]),
            shown(offsets[1]),
            shown(offsets[2]),
            shown(offsets[3]),
            shown(offsets[4])
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let medians: Vec<String> = columns.iter_mut().map(|c| shown(median(c))).collect();
    eprintln!(
        "  median                           {:>4}  {:>10}  {:>5}  {:>8}  {:>8}",
        medians[0], medians[1], medians[2], medians[3], medians[4]
    );
}

/// No pod of the namespace is left Terminating.
async fn nothing_terminating(pods: &Api<Pod>) -> anyhow::Result<()> {
    let terminating: Vec<String> = pods
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .filter_map(|p| p.metadata.name)
        .collect();
    ensure!(terminating.is_empty(), "left Terminating: {terminating:?}");
    Ok(())
}

/// An `EvictionNotice` Event about the workspace that names who evicted it.
async fn notice_event(client: &Client, ns: &str, name: &str, by: &str) -> anyhow::Result<String> {
    lifeguard_e2e::poll_until(
        &format!("{name}: an EvictionNotice Event"),
        Duration::from_secs(60),
        || async {
            let events = events_about(client, Some(ns), "Workspace", name).await?;
            Ok(events
                .into_iter()
                .find(|(reason, note)| reason == "EvictionNotice" && note.contains(by))
                .map(|(_, note)| note))
        },
    )
    .await
}

/// An `Evicted` Event about the workspace that names who evicted it.
async fn evicted_event(client: &Client, ns: &str, name: &str, by: &str) -> anyhow::Result<String> {
    lifeguard_e2e::poll_until(
        &format!("{name}: an Evicted Event"),
        Duration::from_secs(60),
        || async {
            let events = events_about(client, Some(ns), "Workspace", name).await?;
            Ok(events
                .into_iter()
                .find(|(reason, note)| reason == REASON_EVICTED && note.contains(by))
                .map(|(_, note)| note))
        },
    )
    .await
}

#[tokio::test]
async fn an_evicted_workspace_is_saved_and_comes_back() {
    with_namespace("eviction", |client, ns| async move {
        lifeguard_e2e::bind_the_stand_in(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let name = "ev";
        let pod = pod_name(name);
        let running = start_saved(&workspaces, name, PROBED_NODE).await?;
        let node = node_of(&running).unwrap_or_default().to_string();
        let old_uid = pod_uid(&pods.get(&pod).await?);
        let (times, watch) = watch_pods(&client, &ns);
        let outcome = async {
            // A dry run is answered as the eviction would be, and changes nothing.
            let (code, message) = evict_once(&ns, &pod, true).await?;
            ensure!(code == 429, "a dry-run eviction: {code} {message}");
            let untouched = workspaces.get(name).await?;
            ensure!(
                recorded(&untouched).is_none(),
                "a dry run recorded an eviction: {:?}",
                recorded(&untouched)
            );
            ensure!(
                pods.get(&pod).await?.metadata.deletion_timestamp.is_none(),
                "a dry run stopped the pod"
            );

            let (code, message) = evict_once(&ns, &pod, false).await?;
            ensure!(code == 429, "the eviction: {code} {message}");
            // The first eviction is recorded by this very request: the controller has not
            // started the stop yet.
            let expected = format!(
                "lifeguard will save workspace {ns}/{name} before it leaves node {node}, as soon \
                 as its eviction budget has room; retry"
            );
            ensure!(message.contains(&expected), "the answer: {message}");
            // Asked again while it is being saved: the same answer, no second stop.
            let (again, message) = evict_once(&ns, &pod, false).await?;
            let still_held = pods
                .get_opt(&pod)
                .await?
                .is_some_and(|p| p.finalizers().iter().any(|f| f == POD_FINALIZER));
            if still_held {
                ensure!(again == 429, "a retry while held: {again} {message}");
            }
            let record = recorded(&workspaces.get(name).await?).context("no eviction recorded")?;
            ensure!(
                record.pod_uid == old_uid && record.node == node,
                "{record:?}"
            );

            let back = wait_for(
                &workspaces,
                name,
                TIMEOUT,
                "Running after the eviction",
                |w| back_after(w, &old_uid),
            )
            .await?;
            let starts = back.status.as_ref().map(|s| s.pod_starts);
            ensure!(
                starts == Some(2),
                "started again once: podStarts {starts:?}"
            );
            let note = evicted_event(&client, &ns, name, &record.by).await?;
            eprintln!("Event Evicted: {note}");
            ensure!(note.contains("its work was saved"), "{note}");
            nothing_terminating(&pods).await?;
            let saved =
                lifeguard_e2e::workspace_event_time(&client, &ns, name, "DisposalConfirmed")
                    .await?;
            let timeline = {
                let t = times
                    .lock()
                    .map_err(|_| anyhow::anyhow!("watch poisoned"))?;
                Timeline::read(&back, &old_uid, &t, saved)?
            };
            print_timelines("eviction of one workspace", &[timeline]);
            anyhow::Ok(())
        }
        .await;
        watch.abort();
        outcome
    })
    .await;
}

#[tokio::test]
async fn a_workspace_that_asks_to_stop_on_eviction_stays_stopped() {
    with_namespace("eviction-stop", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let ws = workspace("st")
            .spec(json!({"onEviction": "Stop"}))
            .small_requests()
            .build()?;
        workspaces.create(&PostParams::default(), &ws).await?;
        wait_phase(&workspaces, "st", WorkspacePhase::Running, TIMEOUT).await?;
        let (code, message) = evict_once(&ns, &pod_name("st"), false).await?;
        ensure!(code == 429, "the eviction: {code} {message}");
        // Stopped once its pod is released, then the eviction recorded as acted on.
        let stopped = wait_for(
            &workspaces,
            "st",
            TIMEOUT,
            "Stopped after the eviction",
            |w| {
                w.status.as_ref().is_some_and(|s| {
                    s.phase == Some(WorkspacePhase::Stopped) && s.last_eviction.is_some()
                })
            },
        )
        .await?;
        let ready = stopped
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
            .cloned()
            .context("no Ready condition")?;
        ensure!(
            ready.reason == REASON_EVICTED && ready.message.contains("stays stopped"),
            "Ready says {}: {}",
            ready.reason,
            ready.message
        );
        ensure!(
            stopped.status.as_ref().map(|s| s.pod_starts) == Some(1),
            "not restarted"
        );
        Ok(())
    })
    .await;
}

/// Uncordons node 2 when dropped, whatever the test did.
struct Uncordon;

impl Drop for Uncordon {
    fn drop(&mut self) {
        match kubectl(&["uncordon", SECOND_NODE]) {
            Ok(_) => {}
            Err(e) => eprintln!("warning: kubectl uncordon {SECOND_NODE}: {e:#}"),
        }
    }
}

fn kubectl(args: &[&str]) -> anyhow::Result<String> {
    let kubeconfig = std::env::var("KUBECONFIG").unwrap_or_else(|_| LOCAL_KUBECONFIG.to_string());
    let out = Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .output()
        .context("running kubectl")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        bail!("kubectl {args:?} failed:\n{text}");
    }
    Ok(text)
}

const NODE_2_WORKSPACES: [&str; 3] = ["dr-a", "dr-b", "dr-c"];
/// The controller's `--eviction-max-per-node` default, which the local cluster keeps.
const EVICTION_MAX_PER_NODE: usize = 2;

#[tokio::test]
#[ignore = "disruptive: drains node 2; test-all runs it alone with --ignored"]
async fn kubectl_drain_without_force_saves_every_workspace_and_brings_it_back_elsewhere() {
    let _lock = cluster_lock(true).expect("cluster lock");
    with_namespace("drain", |client, ns| async move {
        lifeguard_e2e::bind_the_stand_in(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let mut old = BTreeMap::new();
        for name in NODE_2_WORKSPACES {
            start_saved(&workspaces, name, SECOND_NODE).await?;
            old.insert(name, pod_uid(&pods.get(&pod_name(name)).await?));
        }
        let (times, watch) = watch_pods(&client, &ns);
        let uncordon = Uncordon;
        let outcome = async {
            let started = Timestamp::now();
            // Off the test's runtime thread, so the pod watch keeps recording during the drain.
            let out = tokio::task::spawn_blocking(|| {
                kubectl(&[
                    "drain",
                    SECOND_NODE,
                    "--ignore-daemonsets",
                    "--delete-emptydir-data",
                    "--timeout=300s",
                ])
            })
            .await??;
            let took = Timestamp::now().duration_since(started).as_secs_f64();
            let retries = out.matches("will retry after").count();
            eprintln!("kubectl drain {SECOND_NODE} took {took:.1}s, {retries} evictions answered 429 and retried");
            let mut timelines = Vec::new();
            for name in NODE_2_WORKSPACES {
                let uid = &old[name];
                let back = wait_for(&workspaces, name, TIMEOUT, "Running after the drain", |w| {
                    back_after(w, uid)
                })
                .await?;
                ensure!(node_of(&back) == Some(PROBED_NODE), "{name} runs on {:?}", node_of(&back));
                let eviction = back.status.as_ref().and_then(|s| s.last_eviction.clone());
                let eviction = eviction.context("no lastEviction")?;
                ensure!(eviction.node == SECOND_NODE, "{eviction:?}");
                let note = evicted_event(&client, &ns, name, &eviction.by).await?;
                eprintln!("{name}: Event Evicted: {note}");
                ensure!(note.contains("its work was saved"), "{name}: {note}");
                let notice_event = notice_event(&client, &ns, name, &eviction.by).await?;
                eprintln!("{name}: Event EvictionNotice: {notice_event}");
                let saved = lifeguard_e2e::workspace_event_time(&client, &ns, name, "DisposalConfirmed").await?;
                let t = times.lock().map_err(|_| anyhow::anyhow!("watch poisoned"))?;
                // The pod the IDE runs in carried the notice before its delete was asked.
                let (told, notice) = t
                    .told
                    .get(uid)
                    .with_context(|| format!("{name}: its pod was deleted without a notice"))?;
                let stop = t.deleting.get(uid).context("no stop")?;
                ensure!(told <= stop, "{name}: told at {told}, after its stop at {stop}");
                ensure!(
                    notice.by == eviction.by && notice.node == SECOND_NODE,
                    "{name}: the notice names who evicted it from where: {notice:?}"
                );
                ensure!(
                    notice.message.contains("starts it again on another node"),
                    "{name}: {notice:?}"
                );
                timelines.push(Timeline::read(&back, uid, &t, saved)?);
            }
            nothing_terminating(&pods).await?;
            let most = times.lock().map(|t| t.most_held).unwrap_or(0);
            eprintln!("most workspace pods held in deletion at once: {most}");
            ensure!(
                most <= EVICTION_MAX_PER_NODE,
                "{most} evicted pods were being stopped at once; the node's budget is {EVICTION_MAX_PER_NODE}"
            );
            print_timelines("kubectl drain of node 2", &timelines);
            anyhow::Ok(())
        }
        .await;
        drop(uncordon);
        watch.abort();
        outcome
    })
    .await;
}
