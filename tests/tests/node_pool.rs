//! Upgrading one node at a time, on the two-node local cluster with lifeguard installed as
//! users install it: a node-scoped window on node 2 with a drain budget of one tells and
//! then stops only node 2's workspaces, one at a time (by the pods' deletions and releases,
//! whatever phase the kubelet gives a deleted pod), each saved by the prober's stand-in
//! agent; starts are steered to node 1, never denied; node 2 is labelled drained once the
//! last pod is released, its kubelet upgraded in place from the skew version to the API
//! server's, and given back. A paused drain holds, and `maintenance preview`
//! lists exactly the workspaces the drain then stops.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::ensure;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher;
use lifeguard_api::maintenance::{MaintenanceWindow, condition::DRAINED};
use lifeguard_api::names::{
    DRAINED_BY_ANNOTATION, NODE_DRAINED_LABEL, NODE_WINDOW_ANNOTATION, POD_FINALIZER,
    WORKSPACE_LABEL,
};
use lifeguard_api::workspace::condition::DISPOSAL_CONFIRMED;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::prober::PROBED_NODE;
use lifeguard_e2e::{
    LOCAL_KUBECONFIG, NAMESPACE_LABEL, SECOND_NODE, lifeguard_cluster, poll_until, rfc3339,
    unique_name, wait_for, wait_phase, wait_settled, with_namespace, workspace,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const NODE_1: &str = PROBED_NODE;
const NODE_2: &str = SECOND_NODE;
/// Node 2's workspaces, each saved by the stand-in agent when the drain stops it.
const NODE_2_WORKSPACES: [&str; 3] = ["two-a", "two-b", "two-c"];
const FAILS_ON_SIGTERM: &str = "two-c";

/// A workspace whose disposal the stand-in confirms, on `node` if given.
fn saved_workspace(name: &str, node: Option<&str>) -> anyhow::Result<Workspace> {
    let pinned = node.map_or(
        json!({}),
        |n| json!({"nodeSelector": {"kubernetes.io/hostname": n}}),
    );
    let builder = workspace(name)
        .spec(json!({"confirmDisposal": true}))
        .pod_labels(json!({"disposal-standin": "true"}))
        .pod_spec(pinned)
        .small_requests();
    if name == FAILS_ON_SIGTERM {
        // Its process exits non-zero when asked to stop: the kubelet gives the deleted pod
        // the phase Failed, which must not fail the workspace.
        return builder
            .ide(json!({"command": ["sh", "-c", "trap 'exit 143' TERM; sleep 3600 & wait"]}))
            .build();
    }
    builder.build()
}

async fn start(api: &Api<Workspace>, name: &str, node: Option<&str>) -> anyhow::Result<Workspace> {
    api.create(&PostParams::default(), &saved_workspace(name, node)?)
        .await?;
    wait_phase(api, name, WorkspacePhase::Running, TIMEOUT).await
}

fn node_of(ws: &Workspace) -> Option<&str> {
    ws.status.as_ref()?.node_name.as_deref()
}

/// A node-scoped window on node 2 over namespace `ns`, opening at `opens`.
async fn node_2_window(
    client: &Client,
    ns: &str,
    opens: Timestamp,
    extra: Value,
) -> anyhow::Result<String> {
    let name = unique_name("e2e-pool");
    let mut spec = json!({
        "start": rfc3339(opens),
        "end": rfc3339(opens + SignedDuration::from_mins(30)),
        "drain": true,
        "message": "node 2 upgrade",
        "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": NODE_2}},
        "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}},
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    let window: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))?;
    Api::<MaintenanceWindow>::all(client.clone())
        .create(&PostParams::default(), &window)
        .await?;
    Ok(name)
}

fn drained_condition(w: &MaintenanceWindow) -> bool {
    w.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == DRAINED && c.status == "True")
    })
}

fn node_label(node: &Node) -> Option<(String, String)> {
    let label = node.metadata.labels.as_ref()?.get(NODE_DRAINED_LABEL)?;
    let window = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(NODE_WINDOW_ANNOTATION))
        .cloned()
        .unwrap_or_default();
    Some((label.clone(), window))
}

fn lifeguard(args: &[&str]) -> anyhow::Result<String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lifeguard-cli"));
    if std::env::var_os("KUBECONFIG").is_none() {
        command.args(["--kubeconfig", LOCAL_KUBECONFIG]);
    }
    let out = command.args(args).output()?;
    anyhow::ensure!(
        out.status.success(),
        "lifeguard {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The workspaces `maintenance preview` says the drain would stop.
fn previewed(window: &str) -> anyhow::Result<BTreeSet<String>> {
    let out = lifeguard(&["maintenance", "preview", window, "-o", "json"])?;
    let answer: Value = serde_json::from_str(&out)?;
    Ok(answer["covers"]["workspaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(String::from))
        .collect())
}

/// The pods of `ns` that lifeguard's finalizer holds while they are being deleted, as a
/// watch sees them, in the API server's order: the most held at once, and how many are
/// held now. A pod counts from its deletion until its release (the finalizer's removal),
/// whatever phase the kubelet gives it meanwhile.
#[derive(Default)]
struct HeldPods {
    held: BTreeSet<String>,
    most: usize,
}

fn watch_held_pods(
    client: &Client,
    ns: &str,
) -> (Arc<Mutex<HeldPods>>, tokio::task::JoinHandle<()>) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let seen = Arc::new(Mutex::new(HeldPods::default()));
    let tally = seen.clone();
    let task = tokio::spawn(async move {
        let config = watcher::Config::default().labels(WORKSPACE_LABEL);
        let mut events = watcher(pods, config).boxed();
        while let Some(event) = events.next().await {
            let Ok(event) = event else { continue };
            let Ok(mut tally) = tally.lock() else { return };
            let (pod, gone) = match event {
                watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => (pod, false),
                watcher::Event::Delete(pod) => (pod, true),
                _ => continue,
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            let held = !gone
                && pod.metadata.deletion_timestamp.is_some()
                && pod
                    .metadata
                    .finalizers
                    .as_ref()
                    .is_some_and(|f| f.iter().any(|f| f == POD_FINALIZER));
            if held {
                tally.held.insert(name);
            } else {
                tally.held.remove(&name);
            }
            tally.most = tally.most.max(tally.held.len());
        }
    });
    (seen, task)
}

fn kubelet_version(node: &Node) -> String {
    node.status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.kubelet_version.clone())
        .unwrap_or_default()
}

/// The minor version of a `v1.N.P` version string.
fn minor(version: &str) -> u32 {
    version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
#[ignore = "disruptive: upgrades node 2's kubelet; test-all runs it alone with --ignored"]
async fn upgrading_one_node_stops_its_workspaces_one_at_a_time_and_denies_no_start() {
    with_namespace("node-pool", |client, ns| async move {
        wait_settled(&client).await?;
        let nodes: Api<Node> = Api::all(client.clone());
        let server = client.apiserver_version().await?.git_version;
        // Node 2 is the skew node: `up` starts it with the older kubelet. A cluster kept
        // running from an earlier test run has it upgraded already: put it back first.
        if kubelet_version(&nodes.get(NODE_2).await?) == server {
            lifeguard_cluster(&["node", "kubelet", NODE_2, "skew"])?;
            wait_settled(&client).await?;
        }
        let before = kubelet_version(&nodes.get(NODE_2).await?);
        ensure!(
            minor(&before) < minor(&server),
            "node 2 starts with an older kubelet than the API server's {server}, not {before}"
        );
        lifeguard_e2e::bind_the_stand_in(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        for (name, node) in [("one-a", NODE_1), ("one-b", NODE_1)] {
            start(&workspaces, name, Some(node)).await?;
        }
        for name in NODE_2_WORKSPACES {
            start(&workspaces, name, Some(NODE_2)).await?;
        }
        let (held_pods, watch) = watch_held_pods(&client, &ns);
        // Opens in 20 s; its notice (10 m) goes out at once.
        let window = node_2_window(
            &client,
            &ns,
            Timestamp::now() + SignedDuration::from_secs(20),
            json!({"notice": "10m", "maxConcurrentDrains": 1}),
        )
        .await?;
        let outcome = async {
            for name in NODE_2_WORKSPACES {
                wait_for(&workspaces, name, TIMEOUT, "told of the drain", |w| {
                    w.status
                        .as_ref()
                        .and_then(|s| s.maintenance_notice.as_ref())
                        .is_some_and(|n| n.window == window)
                })
                .await?;
            }
            let expected: BTreeSet<String> = NODE_2_WORKSPACES
                .iter()
                .map(|n| format!("{ns}/{n}"))
                .collect();
            assert_eq!(
                previewed(&window)?,
                expected,
                "preview: exactly node 2's workspaces"
            );
            // Through the drain: never two of node 2's workspaces being stopped at once,
            // neither by the window's count nor by the workspaces themselves.
            let most_in_flight = Arc::new(AtomicU32::new(0));
            poll_until("the window Drained", TIMEOUT * 3, || {
                let (workspaces, windows) = (workspaces.clone(), windows.clone());
                let most = most_in_flight.clone();
                let window = window.clone();
                async move {
                    let w = windows.get(&window).await?;
                    let counted = w
                        .status
                        .as_ref()
                        .and_then(|s| s.workspaces_in_flight)
                        .unwrap_or(0);
                    let stopping = workspaces
                        .list(&Default::default())
                        .await?
                        .items
                        .iter()
                        .filter(|ws| {
                            ws.metadata
                                .annotations
                                .as_ref()
                                .is_some_and(|a| a.contains_key(DRAINED_BY_ANNOTATION))
                                && ws.status.as_ref().and_then(|s| s.phase)
                                    != Some(WorkspacePhase::Stopped)
                        })
                        .count() as u32;
                    most.fetch_max(counted.max(stopping), Ordering::Relaxed);
                    Ok(drained_condition(&w).then_some(()))
                }
            })
            .await?;
            assert_eq!(
                most_in_flight.load(Ordering::Relaxed),
                1,
                "one stop at a time (maxConcurrentDrains: 1), by lifeguard's status"
            );
            let node_2 = poll_until("node 2 labelled drained", TIMEOUT, || async {
                let node = nodes.get(NODE_2).await?;
                Ok(node_label(&node).filter(|(v, _)| v == "true"))
            })
            .await?;
            // Labelled drained only once no pod of the node is still being saved.
            let still_held: Vec<String> = pods
                .list(&Default::default())
                .await?
                .items
                .into_iter()
                .filter(|p| {
                    p.metadata
                        .finalizers
                        .as_ref()
                        .is_some_and(|f| f.iter().any(|f| f == POD_FINALIZER))
                        && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(NODE_2)
                })
                .filter_map(|p| p.metadata.name)
                .collect();
            assert_eq!(
                still_held,
                Vec::<String>::new(),
                "pods held when node 2 was labelled drained"
            );
            let most_held = held_pods.lock().map(|h| h.most).unwrap_or(usize::MAX);
            assert_eq!(
                most_held, 1,
                "one pod held in deletion at a time, by the pods' deletion and release"
            );
            assert_eq!(node_2.1, window, "the annotation names the window");
            assert_eq!(
                node_label(&nodes.get(NODE_1).await?),
                None,
                "node 1 is not selected"
            );
            for name in NODE_2_WORKSPACES {
                let ws = wait_phase(&workspaces, name, WorkspacePhase::Stopped, TIMEOUT).await?;
                let saved = ws.status.as_ref().and_then(|s| {
                    s.conditions
                        .iter()
                        .find(|c| c.type_ == DISPOSAL_CONFIRMED)
                        .map(|c| c.reason.clone())
                });
                assert_eq!(saved.as_deref(), Some("Saved"), "{name}'s work was saved");
            }
            for name in ["one-a", "one-b"] {
                let ws = workspaces.get(name).await?;
                let status = ws.status.as_ref();
                assert_eq!(
                    status.and_then(|s| s.phase),
                    Some(WorkspacePhase::Running),
                    "{name}"
                );
                assert_eq!(
                    status.map(|s| s.pod_starts),
                    Some(1),
                    "{name} never restarted"
                );
                assert!(
                    status.and_then(|s| s.maintenance_notice.as_ref()).is_none(),
                    "{name} never told"
                );
                assert!(
                    !ws.metadata
                        .annotations
                        .unwrap_or_default()
                        .contains_key(DRAINED_BY_ANNOTATION),
                    "{name} never drained"
                );
            }
            // A start during the window is steered to node 1, not denied.
            let late = start(&workspaces, "late", None).await?;
            assert_eq!(node_of(&late), Some(NODE_1));
            // The upgrade: node 2's kubelet replaced in place by the API server's version.
            lifeguard_cluster(&["node", "kubelet", NODE_2, "current"])?;
            let after = kubelet_version(&nodes.get(NODE_2).await?);
            assert_eq!(
                after, server,
                "node 2 reports the new kubelet (was {before})"
            );
            wait_settled(&client).await?;
            lifeguard(&["maintenance", "stop", &window])?;
            poll_until("node 2's label and annotation removed", TIMEOUT, || async {
                Ok(node_label(&nodes.get(NODE_2).await?)
                    .is_none()
                    .then_some(()))
            })
            .await?;
            let back = start(&workspaces, "back", Some(NODE_2)).await?;
            assert_eq!(
                node_of(&back),
                Some(NODE_2),
                "node 2 takes workspaces again"
            );
            anyhow::Ok(())
        }
        .await;
        watch.abort();
        let _ = windows.delete(&window, &DeleteParams::default()).await;
        outcome
    })
    .await;
}

#[tokio::test]
async fn a_paused_drain_holds_until_resumed() {
    with_namespace("node-pool-pause", |client, ns| async move {
        lifeguard_e2e::bind_the_stand_in(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        for name in ["p-a", "p-b"] {
            start(&workspaces, name, Some(NODE_2)).await?;
        }
        let window = node_2_window(
            &client,
            &ns,
            Timestamp::now() - SignedDuration::from_secs(5),
            json!({"drainPaused": true}),
        )
        .await?;
        let outcome = async {
            // The controller has looked at the paused drain: both remain, none in flight.
            let seen = wait_for(&windows, &window, TIMEOUT, "paused drain counted", |w| {
                w.status.as_ref().is_some_and(|s| {
                    s.observed_generation == w.metadata.generation
                        && s.workspaces_remaining == Some(2)
                        && s.workspaces_in_flight == Some(0)
                })
            })
            .await?;
            let nodes = seen.status.map(|s| s.nodes).unwrap_or_default();
            assert_eq!(nodes.len(), 1, "node 2 only: {nodes:?}");
            for name in ["p-a", "p-b"] {
                let ws = workspaces.get(name).await?;
                assert!(
                    !ws.metadata
                        .annotations
                        .unwrap_or_default()
                        .contains_key(DRAINED_BY_ANNOTATION),
                    "{name} not asked to stop while paused"
                );
            }
            lifeguard(&["maintenance", "resume", &window])?;
            wait_for(&windows, &window, TIMEOUT, "Drained", drained_condition).await?;
            anyhow::Ok(())
        }
        .await;
        let _ = windows.delete(&window, &DeleteParams::default()).await;
        outcome
    })
    .await;
}
