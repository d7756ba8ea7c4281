//! A real upgrade tool's own drain: Karpenter (built from the Go module proxy with its kwok
//! cloud provider, `cluster/karpenter.sh`) replaces a drifted node holding three running
//! `confirmDisposal` workspaces, on the live cluster with lifeguard installed as users
//! install it. Its nodes are kwok's fake nodes (`lifeguard-cluster fake-nodes`): the
//! NodePool's template carries the fake nodes' NoSchedule taint, which only these
//! workspaces tolerate. Nothing runs in a pod there, so this test plays the nodes' backup
//! agent with the narrow receipts role, as a platform team's agent would.
//!
//! What a user notices: Karpenter's evictions are answered 429 while each workspace is
//! saved, the Workspaces come back Running on Karpenter's replacement node with their own
//! names, the `Evicted` Event names Karpenter's ServiceAccount, and the drifted node is
//! removed only after every workspace on it was saved. The drift is the runbook's recipe
//! (docs/operations.md "The Karpenter recipe"): a change to the NodePool's template, here a label
//! standing for a new node image.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use lifeguard_api::eviction::REASON_EVICTED;
use lifeguard_api::names::{WORKSPACE_LABEL, pod_name};
use lifeguard_api::receipt::{self, DisposalReceipt, ReceiptResult};
use lifeguard_api::{Workspace, WorkspacePhase, disposal};
use lifeguard_e2e::prober::cluster_lock;
use lifeguard_e2e::{events_about, poll_until, repo_script, wait_for, with_namespace, workspace};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(240);
const NODE_POOL: &str = "lifeguard-e2e";
const NODE_CLASS: &str = "lifeguard-e2e";
/// The label Karpenter puts on every node of a NodePool.
const NODE_POOL_LABEL: &str = "karpenter.sh/nodepool";
/// The taint of the local cluster's fake nodes (cluster/kwok.sh): only pods that tolerate
/// it land there, so no other test's pod ever asks Karpenter for a node.
const FAKE_TAINT: &str = "lifeguard.dev/fake";
/// The template label whose change drifts the pool's nodes: a new "node image".
const IMAGE_LABEL: &str = "lifeguard.dev/e2e-node-image";
/// Who Karpenter is (cluster/karpenter.sh gives it a token of this ServiceAccount).
const KARPENTER_USER: &str = "system:serviceaccount:karpenter:karpenter";
/// Karpenter's metrics (cluster/karpenter.sh).
const KARPENTER_METRICS: &str = "http://127.0.0.1:18090/metrics";
const WORKSPACES: [&str; 3] = ["kp-a", "kp-b", "kp-c"];

fn kubectl(args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
    use std::io::Write as _;
    let kubeconfig =
        std::env::var("KUBECONFIG").unwrap_or_else(|_| lifeguard_e2e::LOCAL_KUBECONFIG.to_string());
    let mut child = Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("running kubectl")?;
    if let Some(input) = stdin
        && let Some(mut pipe) = child.stdin.take()
    {
        pipe.write_all(input.as_bytes())?;
    }
    drop(child.stdin.take());
    let out = child.wait_with_output()?;
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

/// Runs a script of the repository; fails with its output.
fn script(path: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = repo_script(path)
        .args(args)
        .output()
        .with_context(|| format!("running {path}"))?;
    ensure!(
        out.status.success(),
        "{path} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// The NodePool and its KWOKNodeClass, as docs/operations.md "The Karpenter recipe" shows
/// them: no consolidation (only the drift this test makes disrupts), one node disrupted at a
/// time, and a `terminationGracePeriod` longer than lifeguard's `--eviction-max-wait`, so
/// lifeguard, not Karpenter's deadline, ends the wait for a workspace.
fn node_pool(image: &str) -> String {
    json!({
        "apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
             "metadata": {"name": NODE_CLASS}},
            {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
             "metadata": {"name": NODE_POOL},
             "spec": {
                "template": {
                    "metadata": {"labels": {IMAGE_LABEL: image}},
                    "spec": {
                        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": NODE_CLASS},
                        "requirements": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
                        ],
                        "taints": [{"key": FAKE_TAINT, "value": "true", "effect": "NoSchedule"}],
                        "expireAfter": "Never",
                        "terminationGracePeriod": "15m"
                    }
                },
                "disruption": {
                    "consolidationPolicy": "WhenEmpty",
                    "consolidateAfter": "Never",
                    "budgets": [{"nodes": "1"}]
                },
                "limits": {"cpu": "64"}
             }}
        ]
    })
    .to_string()
}

/// A workspace for the pool's nodes only: it tolerates their taint and selects the pool.
fn pool_workspace(name: &str) -> anyhow::Result<Workspace> {
    workspace(name)
        .spec(json!({"confirmDisposal": true}))
        .pod_spec(json!({
            "nodeSelector": {NODE_POOL_LABEL: NODE_POOL},
            "tolerations": [{"key": FAKE_TAINT, "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
        }))
        .small_requests()
        .build()
}

/// The Karpenter pool's nodes as a watch sees them: when each was first seen, and when it
/// was gone from the API.
#[derive(Default)]
struct NodeTimes {
    seen: BTreeMap<String, Timestamp>,
    gone: BTreeMap<String, Timestamp>,
}

fn watch_nodes(client: &Client) -> (Arc<Mutex<NodeTimes>>, tokio::task::JoinHandle<()>) {
    let nodes: Api<Node> = Api::all(client.clone());
    let times = Arc::new(Mutex::new(NodeTimes::default()));
    let tally = times.clone();
    let task = tokio::spawn(async move {
        let config = watcher::Config::default().labels(&format!("{NODE_POOL_LABEL}={NODE_POOL}"));
        let mut events = watcher(nodes, config).boxed();
        while let Some(event) = events.next().await {
            let Ok(event) = event else { continue };
            let now = Timestamp::now();
            let Ok(mut t) = tally.lock() else { return };
            match event {
                watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
                    t.seen.entry(n.name_any()).or_insert(now);
                }
                watcher::Event::Delete(n) => {
                    t.gone.entry(n.name_any()).or_insert(now);
                }
                _ => {}
            }
        }
    });
    (times, task)
}

/// One answer of the test's backup agent: for which workspace pod, on which node, when, and
/// whether that node still existed then.
#[derive(Debug, Clone)]
struct Saved {
    pod_uid: String,
    node: String,
    at: Timestamp,
    node_present: bool,
}

/// Whether the agent answers for `pod` now: it is stopping, waits for a confirmation, and
/// none of its containers runs (kwok stops them within the grace period, as a kubelet would).
fn due(pod: &Pod) -> bool {
    let annotations = pod.metadata.annotations.as_ref();
    pod.metadata.deletion_timestamp.is_some()
        && disposal::confirmation_required(annotations)
        && disposal::result(annotations).is_none()
        && !disposal::any_container_running(pod)
}

/// The nodes' backup agent: answers `Saved` once for each due pod of the namespace, with
/// the narrow receipts identity, and records each answer. Runs until aborted.
fn spawn_agent(
    agent: Client,
    admin: Client,
    ns: &str,
    answers: Arc<Mutex<Vec<Saved>>>,
) -> tokio::task::JoinHandle<()> {
    let pods: Api<Pod> = Api::namespaced(agent.clone(), ns);
    let receipts: Api<DisposalReceipt> = Api::namespaced(agent, ns);
    let nodes: Api<Node> = Api::all(admin);
    tokio::spawn(async move {
        let mut answered = BTreeSet::new();
        let mut stream = watcher(pods, watcher::Config::default().labels(WORKSPACE_LABEL))
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(pod) = stream.next().await {
            let Ok(pod) = pod else { continue };
            let Some(uid) = pod.metadata.uid.clone() else {
                continue;
            };
            if !due(&pod) || answered.contains(&uid) {
                continue;
            }
            let Some(made) = receipt::for_pod(&pod, ReceiptResult::Saved, None) else {
                continue;
            };
            match receipts.create(&PostParams::default(), &made).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => {
                    eprintln!("agent: receipt for {}: {e}", pod.name_any());
                    continue;
                }
            }
            answered.insert(uid.clone());
            let at = Timestamp::now();
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            let node_present = matches!(nodes.get_opt(&node).await, Ok(Some(_)));
            if let Ok(mut a) = answers.lock() {
                a.push(Saved {
                    pod_uid: uid,
                    node,
                    at,
                    node_present,
                });
            }
        }
    })
}

/// Karpenter's own count of eviction requests by answer code (`karpenter_pods_eviction_requests_total`).
fn karpenter_evictions() -> anyhow::Result<BTreeMap<String, f64>> {
    let text = lifeguard_e2e::http_get(KARPENTER_METRICS)?;
    let mut by_code = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("karpenter_pods_eviction_requests_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let code = labels
            .split(',')
            .find_map(|l| l.strip_prefix("code=\""))
            .map(|c| c.trim_end_matches('"').to_string())
            .unwrap_or_default();
        let value: f64 = value.trim().parse().unwrap_or(0.0);
        *by_code.entry(code).or_insert(0.0) += value;
    }
    Ok(by_code)
}

/// Stops Karpenter (and kwok, when this test started it) when dropped, whatever the test did;
/// the pool's NodeClaims and nodes are gone by then (`remove_pool`).
struct Tools {
    started_kwok: bool,
}

impl Drop for Tools {
    fn drop(&mut self) {
        if let Err(e) = script("cluster/karpenter.sh", &["down"]) {
            eprintln!("warning: {e:#}");
        }
        if self.started_kwok
            && let Err(e) = lifeguard_e2e::lifeguard_cluster(&["fake-nodes", "down"])
        {
            eprintln!("warning: {e:#}");
        }
    }
}

fn kwok_running() -> bool {
    Command::new("bash")
        .args(["-c", "kill -0 \"$(cat /run/lifeguard-cluster/kwok.pid)\""])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The pool goes, and with it (by Karpenter, while it runs) its NodeClaims and nodes; what
/// Karpenter has not removed after two minutes is removed here, so no fake node outlives
/// the test.
fn remove_pool() {
    let _ = kubectl(
        &[
            "delete",
            "nodepool",
            NODE_POOL,
            "--ignore-not-found",
            "--wait=false",
        ],
        None,
    );
    let selector = format!("{NODE_POOL_LABEL}={NODE_POOL}");
    let left = || {
        kubectl(
            &["get", "nodeclaims,nodes", "-l", &selector, "-o", "name"],
            None,
        )
        .map(|out| {
            out.lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !left().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(2));
    }
    for object in left() {
        eprintln!("warning: {object} outlived its NodePool; removed without Karpenter");
        let _ = kubectl(
            &[
                "patch",
                &object,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ],
            None,
        );
        let _ = kubectl(
            &["delete", &object, "--ignore-not-found", "--wait=false"],
            None,
        );
    }
    let _ = kubectl(
        &[
            "delete",
            "kwoknodeclass",
            NODE_CLASS,
            "--ignore-not-found",
            "--wait=false",
        ],
        None,
    );
}

#[tokio::test]
#[ignore = "disruptive: runs Karpenter and kwok against the shared cluster; test-all runs it alone with --ignored"]
async fn karpenter_drift_evicts_through_lifeguard_and_the_node_goes_only_after_every_save() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let started_kwok = !kwok_running();
    if started_kwok {
        lifeguard_e2e::lifeguard_cluster(&["fake-nodes", "kwok-up"]).expect("kwok");
    }
    let tools = Tools { started_kwok };
    script("cluster/karpenter.sh", &["up"]).expect("karpenter");
    with_namespace("karpenter", |client, ns| async move {
        let agent_client = lifeguard_e2e::receipts_agent(&client).await?;
        let answers = Arc::new(Mutex::new(Vec::new()));
        let agent = spawn_agent(agent_client, client.clone(), &ns, answers.clone());
        let (node_times, node_watch) = watch_nodes(&client);
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let outcome = async {
            kubectl(&["apply", "-f", "-"], Some(&node_pool("v1")))?;
            for name in WORKSPACES {
                workspaces.create(&PostParams::default(), &pool_workspace(name)?).await?;
            }
            // Karpenter provisions for the pending pods; kwok makes the node Ready.
            let mut old = BTreeMap::new();
            for name in WORKSPACES {
                let running = lifeguard_e2e::wait_phase(&workspaces, name, WorkspacePhase::Running, TIMEOUT)
                    .await
                    .with_context(|| format!("{name}: Running on a node Karpenter made"))?;
                let node = running.status.as_ref().and_then(|s| s.node_name.clone()).context("no node")?;
                let uid = pods.get(&pod_name(name)).await?.metadata.uid.unwrap_or_default();
                old.insert(name, (uid, node));
            }
            let old_nodes: BTreeSet<String> = old.values().map(|(_, n)| n.clone()).collect();
            eprintln!("workspaces Running on Karpenter's node(s) {old_nodes:?}");
            let before = karpenter_evictions()?;

            // A new "node image": the pool's template changes, Karpenter marks its nodes
            // drifted, launches a replacement, then drains and removes the old ones.
            let drifted = Timestamp::now();
            kubectl(
                &["patch", "nodepool", NODE_POOL, "--type=merge", "-p",
                  &json!({"spec": {"template": {"metadata": {"labels": {IMAGE_LABEL: "v2"}}}}}).to_string()],
                None,
            )?;

            let mut rows = Vec::new();
            for name in WORKSPACES {
                let (uid, old_node) = &old[name];
                let back = wait_for(&workspaces, name, TIMEOUT, "Running again after Karpenter's drain", |w| {
                    w.status.as_ref().is_some_and(|s| {
                        s.phase == Some(WorkspacePhase::Running)
                            && s.last_eviction.as_ref().is_some_and(|e| &e.pod_uid == uid)
                    })
                })
                .await?;
                let status = back.status.as_ref().context("no status")?;
                let eviction = status.last_eviction.clone().context("no lastEviction")?;
                ensure!(
                    eviction.by == KARPENTER_USER,
                    "{name}: evicted by {:?}, not by Karpenter's ServiceAccount",
                    eviction.by
                );
                ensure!(&eviction.node == old_node, "{name}: {eviction:?}");
                let now_on = status.node_name.clone().unwrap_or_default();
                ensure!(
                    !old_nodes.contains(&now_on),
                    "{name} runs on {now_on}, one of the drifted nodes"
                );
                ensure!(back.name_any() == name, "a Workspace of another name");
                let note = poll_until(&format!("{name}: an Evicted Event naming Karpenter"), Duration::from_secs(60), || async {
                    Ok(events_about(&client, Some(&ns), "Workspace", name)
                        .await?
                        .into_iter()
                        .find(|(reason, note)| reason == REASON_EVICTED && note.contains(KARPENTER_USER))
                        .map(|(_, note)| note))
                })
                .await?;
                eprintln!("{name}: Event Evicted: {note}");
                ensure!(note.contains("its work was saved"), "{name}: {note}");
                let confirmed = lifeguard_e2e::workspace_event_time(&client, &ns, name, "DisposalConfirmed").await?;
                rows.push((name, uid.clone(), old_node.clone(), eviction.time.0, confirmed, now_on));
            }

            // The drifted nodes go once drained; each only after every save on it.
            let gone = poll_until("the drifted nodes removed", TIMEOUT, || {
                let node_times = node_times.clone();
                let old_nodes = old_nodes.clone();
                async move {
                    let t = node_times.lock().map_err(|_| anyhow::anyhow!("watch poisoned"))?;
                    let gone: Option<BTreeMap<String, Timestamp>> = old_nodes
                        .iter()
                        .map(|n| t.gone.get(n).map(|at| (n.clone(), *at)))
                        .collect();
                    Ok(gone)
                }
            })
            .await?;
            let saved = answers.lock().map_err(|_| anyhow::anyhow!("agent poisoned"))?.clone();
            eprintln!("drift to every drifted node gone: {:.1}s", {
                let last = gone.values().max().copied().unwrap_or(drifted);
                last.duration_since(drifted).as_secs_f64()
            });
            eprintln!("  workspace  evicted (s)  saved (s)  confirmed (s)  node gone (s)  now on");
            let after = |t: Timestamp| t.duration_since(drifted).as_secs_f64();
            for (name, uid, old_node, evicted, confirmed, now_on) in &rows {
                let answer = saved
                    .iter()
                    .find(|s| &s.pod_uid == uid)
                    .with_context(|| format!("{name}: the agent never saved pod {uid}"))?;
                ensure!(
                    answer.node_present && &answer.node == old_node,
                    "{name}: saved on {} which was gone already ({answer:?})",
                    answer.node
                );
                let node_gone = gone[old_node];
                ensure!(
                    node_gone > answer.at,
                    "{name}: node {old_node} gone at {node_gone}, before the save at {}",
                    answer.at
                );
                if let Some(confirmed) = confirmed {
                    ensure!(
                        node_gone > *confirmed,
                        "{name}: node {old_node} gone at {node_gone}, before lifeguard recorded the save at {confirmed}"
                    );
                }
                eprintln!(
                    "  {name:<10} {:>11.1}  {:>9.1}  {:>13}  {:>13.1}  {now_on}",
                    after(*evicted),
                    after(answer.at),
                    confirmed.map_or("-".into(), |c| format!("{:.1}", after(c))),
                    after(node_gone)
                );
            }

            // Karpenter's evictions were answered 429 (at least the first of each workspace).
            let evictions = karpenter_evictions()?;
            let delta = |code: &str| evictions.get(code).copied().unwrap_or(0.0) - before.get(code).copied().unwrap_or(0.0);
            eprintln!("Karpenter's eviction requests by answer: {evictions:?} (before the drift: {before:?})");
            ensure!(
                delta("429") >= WORKSPACES.len() as f64,
                "Karpenter counted {} evictions answered 429, fewer than the workspaces",
                delta("429")
            );
            // Karpenter says on the drifted node why it is still there, and its deadline.
            for node in &old_nodes {
                let reasons: Vec<String> = events_about(&client, None, "Node", node)
                    .await?
                    .into_iter()
                    .map(|(reason, note)| {
                        eprintln!("{node}: Event {reason}: {note}");
                        reason
                    })
                    .collect();
                for reason in ["FailedDraining", "TerminationGracePeriodExpiring"] {
                    ensure!(
                        reasons.iter().any(|r| r == reason),
                        "no {reason} Event about {node}: {reasons:?}"
                    );
                }
            }
            let terminating: Vec<String> = pods
                .list(&Default::default())
                .await?
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_some())
                .map(|p| p.name_any())
                .collect();
            ensure!(terminating.is_empty(), "left Terminating: {terminating:?}");
            anyhow::Ok(())
        }
        .await;
        // The workspaces go while the agent still answers, then the pool and its nodes.
        let _ = kubectl(&["-n", &ns, "delete", "workspaces", "--all", "--wait=true", "--timeout=120s"], None);
        agent.abort();
        node_watch.abort();
        tokio::task::spawn_blocking(remove_pool).await?;
        outcome
    })
    .await;
    drop(tools);
}
