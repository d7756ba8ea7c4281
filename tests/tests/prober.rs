//! The prober on the local cluster: a real DaemonSet pod probed by the real kubelet.
//! Tests that make the node unhealthy hold the cluster lock exclusively and restore the
//! storage on every exit path.

use lifeguard_e2e::prober as support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event as CoreEvent, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use lifeguard_e2e::client;
use support::*;

#[tokio::test]
async fn a_healthy_node_is_reported_healthy_and_the_kubelet_keeps_the_pod_running() {
    let _lock = cluster_lock(false).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");

    let (code, body, _) = get("/healthz").expect("liveness");
    assert_eq!((code, body.as_str()), (200, "healthy"));
    let s = status().expect("status");
    for check in ["volume", "container"] {
        assert_eq!(s["checks"][check]["last"]["result"], "success", "{s:#}");
        assert_eq!(s["checks"][check]["consecutiveFailures"], 0, "{s:#}");
        assert!(s["checks"][check]["lastSuccess"].is_string(), "{s:#}");
    }
    let n = node(&client).await.expect("node");
    let (cstatus, reason, _) = condition(&n).expect("our condition is on the node");
    assert_eq!(
        (cstatus.as_str(), reason.as_str()),
        ("True", "ProbesPassing")
    );
    assert!(!tainted(&n));

    // The kubelet probes the daemon through the prober for three intervals: no restart.
    let pod = prober_pod(&client).await.expect("prober pod");
    assert!(ready(&pod), "the DaemonSet pod is Ready");
    let before = (restarts(&pod, "workspace-daemon"), restarts(&pod, "prober"));
    let failed_before =
        metric("lifeguard_prober_liveness_responses_total{code=\"503\"}").expect("metric");
    let answered_before =
        metric("lifeguard_prober_liveness_responses_total{code=\"200\"}").expect("metric");
    tokio::time::sleep((interval * 3).max(Duration::from_secs(12))).await;
    let pod = prober_pod(&client).await.expect("prober pod");
    assert_eq!(
        (restarts(&pod, "workspace-daemon"), restarts(&pod, "prober")),
        before,
        "no container restarted while the node is healthy"
    );
    let answered =
        metric("lifeguard_prober_liveness_responses_total{code=\"200\"}").expect("metric");
    assert!(
        answered > answered_before,
        "the kubelet's liveness probes reach the prober"
    );
    assert_eq!(
        metric("lifeguard_prober_liveness_responses_total{code=\"503\"}").expect("metric"),
        failed_before
    );
    assert_eq!(
        metric("lifeguard_prober_verdict{verdict=\"healthy\"}").expect("metric"),
        1.0
    );
    // Throwaway pods come and go: never more than the one in flight.
    assert!(probe_pods(&client).await.expect("list").len() <= 1);
}

#[tokio::test]
async fn read_only_storage_makes_the_node_unhealthy_within_two_intervals_and_recovers() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");

    let broken = ReadOnlyStorage::new().expect("remount read-only");
    let detected = wait_verdict("unhealthy", interval * 4)
        .await
        .expect("unhealthy");
    println!(
        "read-only storage detected after {detected:?} = {:.2} intervals of {interval:?}",
        detected.as_secs_f64() / interval.as_secs_f64()
    );
    assert!(
        detected <= interval * 2,
        "detected after {detected:?}, more than two intervals of {interval:?}"
    );
    let (code, body, _) = get("/healthz").expect("liveness");
    assert_eq!((code, body.as_str()), (503, "unhealthy"));
    let s = status().expect("status");
    let error = s["checks"]["volume"]["last"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("Read-only file system"), "{s:#}");

    let n = wait_node(&client, "False and tainted", Duration::from_secs(15), |n| {
        condition(n).is_some_and(|c| c.0 == "False") && tainted(n)
    })
    .await
    .expect("condition and taint");
    let (_, reason, message) = condition(&n).expect("condition");
    assert_eq!(reason, "ProbesFailing");
    assert!(message.contains("volume check failing"), "{message}");
    let events: Api<Event> = Api::all(client.clone());
    let name = n.metadata.name.clone().unwrap_or_default();
    let listed = events.list(&ListParams::default()).await.expect("events");
    assert!(
        listed
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("NodeUnhealthy")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name.as_str())),
        "a NodeUnhealthy event names the node"
    );

    drop(broken);
    let recovered = wait_verdict("healthy", interval * 3)
        .await
        .expect("healthy again");
    println!("writable again: healthy after {recovered:?}");
    assert_eq!(get("/healthz").expect("liveness").0, 200);
    wait_node(
        &client,
        "True and untainted",
        Duration::from_secs(15),
        |n| condition(n).is_some_and(|c| c.0 == "True") && !tainted(n),
    )
    .await
    .expect("condition True, taint removed");
    // Seen through the core/v1 Events API too, as `kubectl describe node` shows it.
    let core: Api<CoreEvent> = Api::all(client.clone());
    let listed = core.list(&ListParams::default()).await.expect("events");
    assert!(
        listed
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("NodeHealthy"))
    );
}

#[tokio::test]
async fn a_prober_killed_mid_check_leaks_nothing_past_the_ttl() {
    let _lock = cluster_lock(true).expect("cluster lock");
    let client = client().await.expect("cluster");
    let interval = healthy_start(&client).await.expect("healthy start");
    let ttl = Duration::from_secs_f64(
        status().expect("status")["settings"]["ttlSeconds"]
            .as_f64()
            .expect("ttl"),
    );
    let restarts_before = restarts(&prober_pod(&client).await.expect("pod"), "prober");

    // A directory as a prober killed between mkdir and rmdir leaves it, expiring soon.
    let expires = jiff::Timestamp::now().as_second() + 3;
    let leftover_dir = format!("{STORAGE}/.lifeguard-probe-{expires}-00000000deadbeef");
    std::fs::create_dir(&leftover_dir).expect("plant a leftover directory");
    std::fs::write(format!("{leftover_dir}/probe"), b"half").expect("write");

    // Kill the prober while its throwaway pod exists.
    let pods: Api<Pod> = Api::namespaced(client.clone(), PROBE_NAMESPACE);
    let started = Instant::now();
    let orphan = loop {
        assert!(
            started.elapsed() < interval * 6,
            "never saw a probe pod in flight"
        );
        let in_flight = probe_pods(&client).await.expect("list");
        if let Some(name) = in_flight.first() {
            let pid = prober_pid().expect("prober process");
            sh(&format!("kill -KILL {pid}")).expect("kill the prober");
            if pods.get_opt(name).await.expect("get").is_some() {
                break name.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let killed_at = Instant::now();
    println!("killed the prober with probe pod {orphan} in flight");

    // The restarted prober's janitor reaps both once expired: within the TTL (plus the
    // restart and one interval for the janitor's next round).
    let budget = ttl + interval * 2 + Duration::from_secs(15);
    lifeguard_e2e::wait_gone(&pods, &orphan, budget)
        .await
        .expect("orphan pod reaped");
    println!("orphan pod reaped {:?} after the kill", killed_at.elapsed());
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::path::Path::new(&leftover_dir).exists() {
        assert!(Instant::now() < deadline, "{leftover_dir} not reaped");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The kubelet reports the restart in the pod's status a sync later; the janitor may
    // have reaped both leftovers before that.
    lifeguard_e2e::poll_until(
        "the kubelet reports the prober restarted",
        Duration::from_secs(60),
        || async {
            let pod = prober_pod(&client).await?;
            Ok((restarts(&pod, "prober") > restarts_before).then_some(()))
        },
    )
    .await
    .expect("the kubelet restarted the prober");
    // The old process may have reaped the directory before it died; the pod can only
    // have been reaped by the new one.
    assert!(
        metric("lifeguard_prober_leftovers_reaped_total{kind=\"pod\"}").expect("metric") >= 1.0
    );
    healthy_start(&client)
        .await
        .expect("healthy after the restart");
}
