//! The real Prometheus of the local run (cluster/monitoring.sh, scraping every 2s): it
//! scrapes all three components, and their key series move when a window denies a
//! workspace start, when a kubelet rejection is recovered, and as the prober checks.
//! Each test holds the cluster lock shared: the prober's disruptive tests taint the node.

use lifeguard_e2e::prober as support;

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};
use jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    NAMESPACE_LABEL, Rejector, apply_crds, node_name, poll_until, sleeping_workspace, unique_name,
    wait_for, with_namespace,
};
use serde_json::{Value, json};

const PROMETHEUS: &str = "http://127.0.0.1:9090";
/// Several scrape and evaluation intervals (2s each in the local run).
const SCRAPE_WAIT: Duration = Duration::from_secs(30);
const TIMEOUT: Duration = Duration::from_secs(90);

/// GET on Prometheus' HTTP API; the `data` of a successful answer.
fn api(path: &str, query: Option<&str>) -> anyhow::Result<Value> {
    let url = format!("{PROMETHEUS}{path}");
    let mut args = vec!["-sS", "-m", "5", "-G", url.as_str()];
    let param;
    if let Some(q) = query {
        param = format!("query={q}");
        args.extend(["--data-urlencode", param.as_str()]);
    }
    let out = Command::new("curl")
        .args(&args)
        .output()
        .context("running curl")?;
    if !out.status.success() {
        bail!(
            "Prometheus at {PROMETHEUS} did not answer {path} (started by ./local-up): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let body: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{path}: {}", String::from_utf8_lossy(&out.stdout)))?;
    if body["status"] != "success" {
        bail!("{path} {query:?}: {body}");
    }
    Ok(body["data"].clone())
}

/// An instant query's single value; None when it selects nothing.
fn value(query: &str) -> anyhow::Result<Option<f64>> {
    let data = api("/api/v1/query", Some(query))?;
    match data["result"].as_array().map(Vec::as_slice) {
        Some([]) | None => Ok(None),
        Some([one]) => Ok(Some(
            one["value"][1].as_str().context("sample value")?.parse()?,
        )),
        Some(many) => bail!("{query} selects {} series; want one", many.len()),
    }
}

/// Polls `query` until it is above `before`; returns the value.
async fn wait_above(query: &str, before: f64) -> anyhow::Result<f64> {
    poll_until(&format!("{query} above {before}"), SCRAPE_WAIT, || async {
        match value(query)? {
            Some(v) if v > before => Ok(Some(v)),
            last => bail!("{query} is {last:?}"),
        }
    })
    .await
}

#[tokio::test]
async fn all_three_components_are_scraped() {
    let _lock = support::cluster_lock(false).expect("cluster lock");
    poll_until("every job with an up target", SCRAPE_WAIT, || async {
        let data = api("/api/v1/targets", None)?;
        let targets = data["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let down: Vec<String> = [
            "lifeguard-webhook",
            "lifeguard-controller",
            "lifeguard-prober",
        ]
        .into_iter()
        .filter(|job| {
            !targets
                .iter()
                .any(|t| t["labels"]["job"] == *job && t["health"] == "up")
        })
        .map(String::from)
        .collect();
        if down.is_empty() {
            Ok(Some(()))
        } else {
            bail!("jobs without an up target: {down:?}; targets: {targets:#?}")
        }
    })
    .await
    .unwrap();
    // The alert rules are loaded, and none of the outage alerts fires on a healthy run.
    let rules = api("/api/v1/rules", None).unwrap();
    let mut groups: Vec<&str> = rules["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    groups.sort_unstable();
    assert_eq!(
        groups,
        [
            "lifeguard-controller",
            "lifeguard-prober",
            "lifeguard-webhook"
        ]
    );
    let firing = value(
        r#"count(ALERTS{alertstate="firing",alertname=~"LifeguardWebhookDown|LifeguardControllerDown|LifeguardControllerNotLeading"})"#,
    )
    .unwrap();
    assert_eq!(firing, None, "outage alerts firing on a healthy run");
}

#[tokio::test]
async fn a_denied_workspace_start_moves_the_webhook_denial_counter() {
    let _lock = support::cluster_lock(false).expect("cluster lock");
    with_namespace("prom-deny", |client, ns| async move {
        apply_crds(&client).await?;
        let denials = r#"sum(lifeguard_webhook_admissions_total{job="lifeguard-webhook",kind="Workspace",decision="denied_maintenance"})"#;
        let before = value(denials)?.unwrap_or(0.0);
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let window = unique_name("e2e-prom-window");
        let now = Timestamp::now();
        let spec = json!({
            "start": (now - SignedDuration::from_secs(60)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "end": (now + SignedDuration::from_secs(120)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "message": "prometheus e2e",
            // Only this test's namespace: no other test is denied.
            "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns.clone()}},
        });
        windows
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": window}, "spec": spec}))?,
            )
            .await?;
        let outcome = async {
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
            // The webhook decides from its watch cache: retry until the window is in it.
            let workspaces = &workspaces;
            poll_until("a denial naming the window", Duration::from_secs(15), || async move {
                let ws = lifeguard_e2e::workspace(&unique_name("denied")).build()?;
                match workspaces.create(&PostParams::default(), &ws).await {
                    Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains("prometheus e2e") => Ok(Some(())),
                    other => bail!("expected a denial naming the window, got {other:?}"),
                }
            })
            .await?;
            let after = wait_above(denials, before).await?;
            eprintln!("denials: {before} -> {after}");
            Ok(())
        }
        .await;
        let _ = windows.delete(&window, &DeleteParams::default()).await;
        outcome
    })
    .await;
}

#[tokio::test]
async fn a_recovered_kubelet_rejection_moves_the_controller_counters() {
    let _lock = support::cluster_lock(false).expect("cluster lock");
    with_namespace("prom-reject", |client, ns| async move {
        apply_crds(&client).await?;
        let rejections = r#"sum(lifeguard_controller_pod_rejections_total{job="lifeguard-controller",reason="NodeAffinity",class="transient"})"#;
        let recreations = r#"sum(lifeguard_controller_recreations_total{job="lifeguard-controller"})"#;
        let rejections_before = value(rejections)?.unwrap_or(0.0);
        let recreations_before = value(recreations)?.unwrap_or(0.0);
        let node = node_name(&client).await?;
        let rejector = Rejector::new(
            &client,
            &node,
            &format!("lifeguard.dev/{}", unique_name("e2e-pool")),
        );
        rejector.reject().await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &sleeping_workspace("carol", &rejector)?)
            .await?;
        let rejected = wait_for(&workspaces, "carol", TIMEOUT, "rejected", |w| {
            w.status.as_ref().is_some_and(|s| s.last_rejection.is_some())
        })
        .await;
        rejector.admit().await?;
        let running = match rejected {
            Ok(_) => {
                wait_for(&workspaces, "carol", TIMEOUT, "Running again", |w| {
                    w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running)
                })
                .await
            }
            Err(e) => Err(e),
        };
        // Leaves no label behind on the node.
        rejector.reject().await?;
        running?;
        let r = wait_above(rejections, rejections_before).await?;
        let c = wait_above(recreations, recreations_before).await?;
        eprintln!("rejections: {rejections_before} -> {r}; recreations: {recreations_before} -> {c}");
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn the_probers_checks_are_counted_and_its_verdict_exported() {
    let _lock = support::cluster_lock(false).expect("cluster lock");
    let checks = r#"sum(lifeguard_prober_checks_total{job="lifeguard-prober"})"#;
    let before = value(checks).unwrap().unwrap_or(0.0);
    // One check interval (5s in the local run) plus a container check (up to its deadline).
    let counted = poll_until(
        &format!("{checks} above {before}"),
        Duration::from_secs(60),
        || async { Ok(value(checks)?.filter(|v| *v > before)) },
    )
    .await;
    assert!(counted.is_ok(), "{counted:?}");
    // Every prober (one per node) has exactly one current verdict.
    for aggregate in ["max", "min"] {
        let verdicts = value(&format!(
            r#"{aggregate}(sum by (pod) (lifeguard_prober_verdict{{job="lifeguard-prober"}}))"#
        ))
        .unwrap();
        assert_eq!(
            verdicts,
            Some(1.0),
            "exactly one verdict is current ({aggregate})"
        );
    }
    let volume = value(r#"sum(lifeguard_prober_check_duration_seconds_count{job="lifeguard-prober",check="volume"})"#).unwrap();
    assert!(
        volume.is_some_and(|v| v > 0.0),
        "volume check latency exported"
    );
}

/// Polls until `query` selects a series with value `want`.
async fn wait_value(query: &str, want: f64, timeout: Duration) -> anyhow::Result<()> {
    poll_until(&format!("{query} at {want}"), timeout, || async {
        match value(query)? {
            Some(v) if v == want => Ok(Some(())),
            last => bail!("{query} is {last:?}"),
        }
    })
    .await
}

#[tokio::test]
async fn a_failing_probe_shows_in_prometheus_and_raises_the_node_alert() {
    // Exclusive: the node goes unhealthy and is tainted for a few seconds.
    let _lock = support::cluster_lock(true).expect("cluster lock");
    let client = lifeguard_e2e::client().await.expect("cluster");
    support::healthy_start(&client)
        .await
        .expect("healthy start");
    let failures = r#"sum(lifeguard_prober_checks_total{job="lifeguard-prober",check="volume",outcome="failure"})"#;
    let before = value(failures).unwrap().unwrap_or(0.0);
    let broken = support::ReadOnlyStorage::new().expect("remount read-only");
    let seen = async {
        wait_above(failures, before).await?;
        wait_value(
            // One series per node; the probed node's turns unhealthy.
            r#"lifeguard_prober_verdict{job="lifeguard-prober",node="lifeguard-node-1",verdict="unhealthy"}"#,
            1.0,
            Duration::from_secs(60),
        )
        .await?;
        // The rule is evaluated (pending: it fires after 2 minutes).
        wait_value(
            r#"count(ALERTS{alertname="LifeguardNodeUnhealthy"})"#,
            1.0,
            SCRAPE_WAIT,
        )
        .await
    }
    .await;
    drop(broken);
    support::wait_verdict("healthy", Duration::from_secs(60))
        .await
        .expect("healthy again");
    // Other tests need the node schedulable again.
    support::wait_node(&client, "untainted", Duration::from_secs(15), |n| {
        !support::tainted(n)
    })
    .await
    .expect("taint removed");
    seen.unwrap();
    wait_value(
        r#"lifeguard_prober_verdict{job="lifeguard-prober",node="lifeguard-node-1",verdict="healthy"}"#,
        1.0,
        SCRAPE_WAIT,
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn every_dashboard_query_is_valid_promql() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/grafana/lifeguard.json"
    );
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut exprs = vec![dashboard["annotations"]["list"][0]["expr"].clone()];
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            exprs.push(target["expr"].clone());
        }
    }
    assert!(exprs.len() > 15, "{exprs:?}");
    for expr in exprs {
        let expr = expr.as_str().unwrap().replace("$__rate_interval", "1m");
        // An invalid query is an error status, which `value` turns into Err; several
        // series are fine here.
        if let Err(e) = api("/api/v1/query", Some(&expr)) {
            panic!("dashboard query {expr}: {e:#}");
        }
    }
}

/// The start SLO's histogram: a workspace that starts is timed (Workspace created to
/// Running) and Prometheus has the observation; with a second start in the rate window the
/// p95 recording rule yields a value.
#[tokio::test]
async fn a_workspace_start_is_timed_for_the_start_slo() {
    let _lock = support::cluster_lock(false).expect("cluster lock");
    with_namespace("prom-start", |client, ns| async move {
        apply_crds(&client).await?;
        let started = r#"sum(lifeguard_controller_workspace_start_seconds_count{job="lifeguard-controller",outcome="started"})"#;
        let before = value(started)?.unwrap_or(0.0);
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let mut after = before;
        // Two starts, each scraped: a counter's first sample carries no rate, the second does.
        for name in ["erin", "frank"] {
            workspaces
                .create(&PostParams::default(), &lifeguard_e2e::workspace(name).build()?)
                .await?;
            wait_for(&workspaces, name, TIMEOUT, "Running", |w| {
                w.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running)
            })
            .await?;
            after = wait_above(started, after).await?;
        }
        let p95 = poll_until(
            "lifeguard:workspace_start_seconds:p95_30m has a value",
            SCRAPE_WAIT,
            || async {
                Ok(value("lifeguard:workspace_start_seconds:p95_30m")?
                    .filter(|v| v.is_finite() && *v > 0.0))
            },
        )
        .await?;
        let seconds = r#"sum(lifeguard_controller_workspace_start_seconds_sum{job="lifeguard-controller",outcome="started"})"#;
        eprintln!(
            "starts timed: {before} -> {after}; seconds in all {:?}; p95 over 30m {p95}",
            value(seconds)?
        );
        anyhow::ensure!(p95 < 1200.0, "p95 {p95}");
        Ok(())
    })
    .await;
}
