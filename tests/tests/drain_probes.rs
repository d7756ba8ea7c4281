//! lifeguard never blocks a drain on its own pods: a plain `kubectl drain` (no `--force`)
//! of a node with no workspaces succeeds while the prober keeps probing, the prober
//! reports the node cordoned (not unhealthy) and starts no probe pod on it, and
//! `kubectl uncordon` brings it back to healthy. Disruptive (it drains a node, which moves
//! the webhook's and controller's replicas), so it holds the cluster lock exclusively and
//! is ignored by a plain `cargo test`; test-all runs it alone with `--ignored`.
//!
//! The webhook's and the controller's PodDisruptionBudgets (`minAvailable: 1` of two
//! replicas) must not make such a drain hang either, even with both controller replicas on
//! the drained node.

use lifeguard_e2e::prober as support;

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use lifeguard_e2e::{
    Component, LIFEGUARD_NAMESPACE, SECOND_NODE, client, poll_every, poll_until, ready_pods,
    wait_ready_pods,
};
use support::*;

/// How long `kubectl drain` may take: evicting the webhook's and controller's replicas
/// waits for their PodDisruptionBudgets (a replacement must become ready elsewhere).
const DRAIN_TIMEOUT: &str = "180s";
/// Tries at catching a probe pod alive at the moment of the drain (it lives a few seconds
/// of each interval).
const ATTEMPTS: usize = 6;

fn kubectl(args: &[&str]) -> anyhow::Result<(bool, String)> {
    let kubeconfig =
        std::env::var("KUBECONFIG").unwrap_or_else(|_| lifeguard_e2e::LOCAL_KUBECONFIG.to_string());
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
    Ok((out.status.success(), text))
}

/// Uncordons these nodes when dropped, whatever the test did.
struct Uncordon(&'static [&'static str]);

impl Drop for Uncordon {
    fn drop(&mut self) {
        for node in self.0 {
            match kubectl(&["uncordon", node]) {
                Ok((true, _)) => {}
                Ok((false, out)) => eprintln!("warning: could not uncordon {node}: {out}"),
                Err(e) => eprintln!("warning: could not uncordon {node}: {e:#}"),
            }
        }
    }
}

fn cordoned(node: &k8s_openapi::api::core::v1::Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

fn unfinished(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// The probed node's probe pods that are still running, whole.
async fn live_probe_pods(client: &Client) -> anyhow::Result<Vec<Pod>> {
    Ok(probe_pods_whole(client)
        .await?
        .into_iter()
        .filter(unfinished)
        .collect())
}

/// What on the probed node would keep a drain from succeeding without lifeguard having any
/// part in it: workspace pods (this test is about a node without them) and other tests'
/// pods that declare no controller (only `--force` evicts those). Probe pods are not
/// excluded: they are what the test is about.
async fn not_for_this_drain(client: &Client) -> anyhow::Result<Vec<String>> {
    let pods: Api<Pod> = Api::all(client.clone());
    Ok(pods
        .list(&ListParams::default().fields(&format!("spec.nodeName={PROBED_NODE}")))
        .await?
        .items
        .iter()
        .filter(|p| unfinished(p))
        .filter(|p| {
            p.labels().contains_key("lifeguard.dev/workspace")
                || (p.namespace().as_deref() != Some(PROBE_NAMESPACE)
                    && !p.annotations().contains_key("kubernetes.io/config.mirror")
                    && !p
                        .owner_references()
                        .iter()
                        .any(|o| o.controller == Some(true)))
        })
        .map(|p| format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()))
        .collect())
}

/// Waits for a probe pod of the probed node that has not finished, then drains the node
/// at once; returns the drain's output and the probe pod's name.
async fn drain_while_probing(client: &Client, interval: Duration) -> anyhow::Result<(String, Pod)> {
    let probe = poll_every(
        "a probe pod running on the node",
        interval * 4,
        Duration::from_millis(50),
        || async { Ok(live_probe_pods(client).await?.into_iter().next()) },
    )
    .await?;
    let (ok, out) = kubectl(&[
        "drain",
        PROBED_NODE,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        &format!("--timeout={DRAIN_TIMEOUT}"),
    ])?;
    if !ok {
        bail!("kubectl drain without --force failed:\n{out}");
    }
    Ok((out, probe))
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn a_plain_kubectl_drain_evicts_probe_pods_and_the_prober_reports_the_node_cordoned() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");
    let deadline = Duration::from_secs_f64(
        status().expect("status")["settings"]["containerDeadlineSeconds"]
            .as_f64()
            .expect("container deadline"),
    );
    let others = not_for_this_drain(&client).await.expect("list pods");
    assert!(
        others.is_empty(),
        "this test drains a node with no workspaces and no uncontrolled pods; found {others:?}"
    );
    let _uncordon = Uncordon(&[PROBED_NODE]);

    // Until a drain met a probe pod that was still running: before probe pods had a
    // controller, exactly such a drain failed ("cannot delete Pods that declare no
    // controller").
    let mut evicted = None;
    for attempt in 1..=ATTEMPTS {
        let (out, probe) = drain_while_probing(&client, interval)
            .await
            .expect("drain succeeds");
        let owner = probe
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))
            .cloned();
        let node_uid = node(&client).await.expect("node").metadata.uid;
        assert!(
            owner.as_ref().is_some_and(|o| o.kind == "Node"
                && o.name == PROBED_NODE
                && Some(&o.uid) == node_uid.as_ref()),
            "the probe pod's controller is its Node: {owner:?}"
        );
        assert_eq!(
            probe
                .annotations()
                .get("cluster-autoscaler.kubernetes.io/safe-to-evict")
                .map(String::as_str),
            Some("true")
        );
        assert!(
            !probe
                .annotations()
                .contains_key("karpenter.sh/do-not-disrupt")
        );
        // kubectl's drain prints this for each pod it evicts (k8s.io/kubectl/pkg/drain).
        if out.contains(&format!(
            "evicting pod {PROBE_NAMESPACE}/{}",
            probe.name_any()
        )) {
            println!(
                "attempt {attempt}: drain evicted probe pod {}:\n{out}",
                probe.name_any()
            );
            evicted = Some(probe.name_any());
            break;
        }
        println!("attempt {attempt}: the probe pod finished before the drain reached it:\n{out}");
        let (ok, out) = kubectl(&["uncordon", PROBED_NODE]).expect("kubectl");
        assert!(ok, "uncordon: {out}");
        wait_verdict("healthy", interval * 3 + deadline)
            .await
            .expect("healthy after uncordon");
    }
    let evicted = evicted.expect("no drain met a running probe pod");

    // Drained: the prober says so, and neither blames nor taints the node.
    let took = wait_verdict("cordoned", interval * 2 + deadline)
        .await
        .expect("verdict cordoned");
    println!("verdict cordoned {took:?} after the drain (probe pod {evicted} evicted)");
    let drained = wait_node(
        &client,
        "condition NodeCordoned",
        Duration::from_secs(30),
        |n| cordoned(n) && condition(n).is_some_and(|c| c.0 == "Unknown" && c.1 == "NodeCordoned"),
    )
    .await
    .expect("condition NodeCordoned");
    assert!(
        !tainted(&drained),
        "a drained node is not tainted unhealthy"
    );
    let (code, _, _) = get("/healthz").expect("liveness");
    assert_eq!(code, 200, "a drain restarts no workspace daemon");
    assert_eq!(
        metric(r#"lifeguard_prober_verdict{verdict="cordoned"}"#).expect("metric"),
        1.0
    );

    // No probe pod while cordoned, over two volume checks (the prober keeps running them).
    poll_every(
        "the evicted probe pod gone",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || async { Ok(probe_pods(&client).await?.is_empty().then_some(())) },
    )
    .await
    .expect("no probe pod left");
    let volume_runs = || {
        ["success", "failure", "unknown"]
            .iter()
            .map(|o| {
                metric(&format!(
                    r#"lifeguard_prober_checks_total{{check="volume",outcome="{o}"}}"#
                ))
                .unwrap_or(0.0)
            })
            .sum::<f64>()
    };
    let container_runs = || {
        ["success", "failure"]
            .iter()
            .map(|o| {
                metric(&format!(
                    r#"lifeguard_prober_checks_total{{check="container",outcome="{o}"}}"#
                ))
                .unwrap_or(0.0)
            })
            .sum::<f64>()
    };
    let (volume_before, container_before) = (volume_runs(), container_runs());
    let client_ref = &client;
    poll_every(
        "two more volume checks while cordoned",
        interval * 4,
        Duration::from_millis(100),
        || async move {
            let started = probe_pods(client_ref).await?;
            if !started.is_empty() {
                bail!("a probe pod was started on the cordoned node: {started:?}");
            }
            Ok((volume_runs() >= volume_before + 2.0).then_some(()))
        },
    )
    .await
    .expect("no probe pod while cordoned");
    assert_eq!(
        container_runs(),
        container_before,
        "no container check ran while cordoned"
    );
    let s = status().expect("status");
    assert_eq!(s["verdict"], "cordoned", "{s:#}");
    assert_eq!(s["cordoned"], true, "{s:#}");

    // Uncordoned: probing resumes and the node is healthy again.
    let (ok, out) = kubectl(&["uncordon", PROBED_NODE]).expect("kubectl");
    assert!(ok, "uncordon: {out}");
    let took = wait_verdict("healthy", interval * 3 + deadline)
        .await
        .expect("healthy after uncordon");
    println!("healthy {took:?} after the uncordon");
    wait_node(&client, "healthy", Duration::from_secs(30), |n| {
        !cordoned(n) && condition(n).is_some_and(|c| c.0 == "True") && !tainted(n)
    })
    .await
    .expect("condition True");
    assert!(
        container_runs() > container_before,
        "the container check runs again"
    );
}

fn on_node(pods: &[Pod], node: &str) -> usize {
    pods.iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
        .count()
}

#[tokio::test]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn a_drain_of_the_node_holding_both_controller_replicas_does_not_hang_on_the_budget() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    healthy_start(&client).await.expect("healthy start");
    let others = not_for_this_drain(&client).await.expect("list pods");
    assert!(
        others.is_empty(),
        "pods no plain drain can evict: {others:?}"
    );
    let _uncordon = Uncordon(&[PROBED_NODE, SECOND_NODE]);
    let ready = Duration::from_secs(120);

    // Both controller replicas onto the probed node: the second node takes no pods while
    // its replica is replaced (the anti-affinity is only preferred).
    let (ok, out) = kubectl(&["cordon", SECOND_NODE]).expect("kubectl");
    assert!(ok, "cordon: {out}");
    let (ok, out) = kubectl(&[
        "-n",
        LIFEGUARD_NAMESPACE,
        "delete",
        "pods",
        "-l",
        &Component::Controller.selector(),
        &format!("--field-selector=spec.nodeName={SECOND_NODE}"),
        "--wait=false",
    ])
    .expect("kubectl");
    assert!(ok, "delete: {out}");
    let client_ref = &client;
    poll_until(
        "both controller replicas ready on the probed node",
        ready,
        || async move {
            let pods = ready_pods(client_ref, Component::Controller).await?;
            Ok((pods.len() == 2 && on_node(&pods, PROBED_NODE) == 2).then_some(()))
        },
    )
    .await
    .expect("both controller replicas on one node");
    let (ok, out) = kubectl(&["uncordon", SECOND_NODE]).expect("kubectl");
    assert!(ok, "uncordon: {out}");

    // One eviction at a time is all the budget allows; kubectl retries the other until the
    // first one's replacement is ready on the other node.
    let started = std::time::Instant::now();
    let (ok, out) = kubectl(&[
        "drain",
        PROBED_NODE,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        &format!("--timeout={DRAIN_TIMEOUT}"),
    ])
    .expect("kubectl");
    assert!(ok, "kubectl drain without --force failed:\n{out}");
    println!("drained in {:?}:\n{out}", started.elapsed());
    let pods = wait_ready_pods(&client, Component::Controller, 2, ready)
        .await
        .expect("two controller replicas ready again");
    assert_eq!(on_node(&pods, SECOND_NODE), 2, "both on the node left");
    assert!(
        !ready_pods(&client, Component::Webhook)
            .await
            .expect("webhook pods")
            .is_empty(),
        "a webhook replica served throughout"
    );

    let (ok, out) = kubectl(&["uncordon", PROBED_NODE]).expect("kubectl");
    assert!(ok, "uncordon: {out}");
    wait_ready_pods(&client, Component::Webhook, 2, ready)
        .await
        .expect("both webhook replicas ready after the uncordon");
}
