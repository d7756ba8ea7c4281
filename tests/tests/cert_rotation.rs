//! The webhook's serving certificate is rotated (the way the kubelet updates a Secret
//! volume) while the API server keeps sending it admission requests: none may fail.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use lifeguard_api::workspace::Workspace;
use lifeguard_e2e::{BUSYBOX_IMAGE, apply_crds, with_namespace};
use serde_json::json;

/// Where `./local-up` keeps the webhook's certificate and serves its metrics.
const TLS_DIR: &str = "/var/lib/lifeguard-cluster/webhook-tls";
const WEBHOOK_ADDR: &str = "127.0.0.1:8443";
const METRICS_URL: &str = "http://127.0.0.1:8081/metrics";

fn served_serial() -> anyhow::Result<String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl s_client -connect {WEBHOOK_ADDR} </dev/null 2>/dev/null | openssl x509 -noout -serial"
        ))
        .output()?;
    anyhow::ensure!(out.status.success(), "cannot read the served certificate");
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn rotate() -> anyhow::Result<()> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/webhook-cert");
    let status = Command::new(script).args(["rotate", TLS_DIR]).status()?;
    anyhow::ensure!(status.success(), "certs/webhook-cert rotate failed");
    Ok(())
}

fn successful_reloads() -> anyhow::Result<u64> {
    let out = Command::new("curl").args(["-fsS", METRICS_URL]).output()?;
    anyhow::ensure!(out.status.success(), "cannot scrape {METRICS_URL}");
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .find(|l| l.starts_with("lifeguard_webhook_cert_reloads_total{result=\"success\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
        .unwrap_or(0))
}

#[tokio::test]
async fn rotating_the_serving_certificate_fails_no_admission() {
    with_namespace("rotation", |client, ns| async move {
        apply_crds(&client).await?;
        let reloads_before = successful_reloads()?;
        let serial_before = served_serial()?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let admitted = Arc::new(AtomicU64::new(0));
        let mut senders = Vec::new();
        for sender in 0..4 {
            let (client, ns, stop, admitted) = (client.clone(), ns.clone(), stop.clone(), admitted.clone());
            senders.push(tokio::spawn(async move {
                let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
                let workspaces: Api<Workspace> = Api::namespaced(client, &ns);
                let dry_run = PostParams { dry_run: true, ..Default::default() };
                let mut failures = Vec::new();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    // Dry-run creates pass through both webhooks and leave nothing behind.
                    let pod: Pod = serde_json::from_value(json!({
                        "metadata": {"name": format!("ws-{sender}-{i}"), "labels": {"lifeguard.dev/workspace": "w"}},
                        "spec": {"nodeName": "e2e-nowhere", "containers": [{"name": "c", "image": BUSYBOX_IMAGE}]}
                    }))?;
                    match pods.create(&dry_run, &pod).await {
                        Ok(p) if p.metadata.finalizers.as_ref().is_some_and(|f| f.iter().any(|f| f == "lifeguard.dev/disposal")) => {}
                        Ok(_) => failures.push("pod admitted without the finalizer".to_string()),
                        Err(e) => failures.push(format!("pod: {e}")),
                    }
                    let ws: Workspace = serde_json::from_value(json!({
                        "metadata": {"name": format!("w-{sender}-{i}")},
                        "spec": {"podTemplate": {"spec": {"containers": [{"name": "c", "image": BUSYBOX_IMAGE}]}}}
                    }))?;
                    if let Err(e) = workspaces.create(&dry_run, &ws).await {
                        failures.push(format!("workspace: {e}"));
                    }
                    admitted.fetch_add(2, Ordering::Relaxed);
                }
                anyhow::Ok(failures)
            }));
        }
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_secs(2)).await;
            tokio::task::spawn_blocking(rotate).await??;
            // The webhook polls every 2 s in the local run.
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        stop.store(true, Ordering::Relaxed);
        let mut failures = Vec::new();
        for sender in senders {
            failures.extend(sender.await??);
        }
        let total = admitted.load(Ordering::Relaxed);
        assert!(total > 100, "traffic kept flowing: only {total} admissions");
        assert!(failures.is_empty(), "{} of {total} admissions failed: {:?}", failures.len(), &failures[..failures.len().min(5)]);
        assert_eq!(successful_reloads()? - reloads_before, 3, "each rotation is reloaded once");
        assert_ne!(served_serial()?, serial_before, "new connections get the new certificate");
        Ok(())
    })
    .await;
}
