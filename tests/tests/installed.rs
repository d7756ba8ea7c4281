//! lifeguard as `./local-up` installs it, the way users run it: its own images, installed
//! by `kubectl apply -k`, on the pod network, reaching the API server through the
//! `kubernetes` Service and reached by it through the webhook's Service.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Endpoints, Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::MaintenanceWindow;
use lifeguard_e2e::{
    Component, client, controller_leader, local_pid, pod_says_it_leads, wait_ready_pods,
};
use serde_json::json;

fn image(pod: &Pod, container: &str) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == container))
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

/// `lifeguard.local/lifeguard-<component>:<version>-<12 hex digits of content digest>`.
fn is_versioned_digest_tag(image: &str, component: &str) -> bool {
    let Some(tag) = image.strip_prefix(&format!("lifeguard.local/lifeguard-{component}:")) else {
        return false;
    };
    let Some((version, digest)) = tag.rsplit_once('-') else {
        return false;
    };
    version == env!("CARGO_PKG_VERSION")
        && digest.len() == 12
        && digest.chars().all(|c| c.is_ascii_hexdigit())
}

/// The uid a process runs as, from /proc/<pid>/status (`Uid: real effective ...`).
fn uid(pid: u32) -> anyhow::Result<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse().ok())
        .context("no effective uid in /proc/<pid>/status")
}

async fn ready_nodes(client: &Client) -> anyhow::Result<Vec<String>> {
    let nodes: Api<Node> = Api::all(client.clone());
    Ok(nodes
        .list(&ListParams::default().labels("lifeguard.dev/local-cluster=true"))
        .await?
        .items
        .into_iter()
        .filter(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .map(|n| n.name_any())
        .collect())
}

#[tokio::test]
async fn lifeguard_runs_as_pods_from_its_own_images() -> anyhow::Result<()> {
    let client = client().await?;
    let timeout = Duration::from_secs(120);
    let webhooks = wait_ready_pods(&client, Component::Webhook, 2, timeout).await?;
    let controllers = wait_ready_pods(&client, Component::Controller, 2, timeout).await?;
    let nodes = ready_nodes(&client).await?;
    let probers = wait_ready_pods(&client, Component::Prober, nodes.len(), timeout).await?;

    let mut prober_nodes: Vec<String> = probers
        .iter()
        .filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()))
        .collect();
    prober_nodes.sort();
    let mut sorted_nodes = nodes.clone();
    sorted_nodes.sort();
    ensure!(
        prober_nodes == sorted_nodes,
        "one prober per node: {prober_nodes:?} vs {sorted_nodes:?}"
    );

    for (pods, component, container) in [
        (&webhooks, "webhook", "webhook"),
        (&controllers, "controller", "controller"),
        (&probers, "prober", "prober"),
    ] {
        for pod in pods {
            let image = image(pod, container);
            ensure!(
                is_versioned_digest_tag(&image, component),
                "{}: image {image} is not lifeguard.local/lifeguard-{component}:VERSION-DIGEST",
                pod.name_any()
            );
            ensure!(
                pod.spec.as_ref().and_then(|s| s.host_network) != Some(true),
                "{}: on the pod network, not the host's",
                pod.name_any()
            );
        }
    }
    // The images' default user: the webhook and the controller run as uid 65532.
    for (pods, binary) in [
        (&webhooks, "lifeguard-webhook"),
        (&controllers, "lifeguard-controller"),
    ] {
        for pod in pods {
            let pid = local_pid(&pod.name_any(), binary)?;
            ensure!(
                uid(pid)? == 65532,
                "{}: {binary} runs as uid 65532",
                pod.name_any()
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn exactly_one_controller_replica_leads() -> anyhow::Result<()> {
    let client = client().await?;
    let controllers =
        wait_ready_pods(&client, Component::Controller, 2, Duration::from_secs(120)).await?;
    let holder = controller_leader(&client)
        .await?
        .context("nobody holds the Lease")?;
    let leading: Vec<String> = controllers
        .iter()
        .filter(|p| pod_says_it_leads(p))
        .map(|p| p.name_any())
        .collect();
    ensure!(
        leading == vec![holder.clone()],
        "only the Lease holder {holder} leads: {leading:?}"
    );
    Ok(())
}

#[tokio::test]
async fn services_route_both_ways() -> anyhow::Result<()> {
    let client = client().await?;
    // Pods reach the API server through the `kubernetes` Service: it has an endpoint on
    // the node address (not loopback), which kube-proxy's rules send Service traffic to.
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    let kubernetes = endpoints.get("kubernetes").await?;
    let addresses: Vec<String> = kubernetes
        .subsets
        .unwrap_or_default()
        .into_iter()
        .flat_map(|s| s.addresses.unwrap_or_default())
        .map(|a| a.ip)
        .collect();
    ensure!(
        !addresses.is_empty() && addresses.iter().all(|a| !a.starts_with("127.")),
        "the kubernetes Service has a routable endpoint: {addresses:?}"
    );

    // The API server calls the webhook through its Service, never by URL.
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let mut configs = Vec::new();
    for w in validating
        .get("lifeguard-validate")
        .await?
        .webhooks
        .unwrap_or_default()
    {
        configs.push((w.name, w.client_config));
    }
    for w in mutating
        .get("lifeguard-mutate")
        .await?
        .webhooks
        .unwrap_or_default()
    {
        configs.push((w.name, w.client_config));
    }
    ensure!(
        configs.len() >= 3,
        "lifeguard's webhooks are registered: {configs:?}"
    );
    for (name, config) in &configs {
        let service = config
            .service
            .as_ref()
            .with_context(|| format!("{name}: called by Service"))?;
        ensure!(config.url.is_none(), "{name}: no URL");
        ensure!(
            service.name == "lifeguard-webhook" && service.namespace == "lifeguard-system",
            "{name}: the lifeguard-webhook Service"
        );
        ensure!(
            config.ca_bundle.as_ref().is_some_and(|b| !b.0.is_empty()),
            "{name}: has a CA bundle"
        );
    }

    // And an admission through it works: an invalid window is denied by the webhook with
    // its own message (the CRD schema alone would accept end before start).
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let invalid: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": "e2e-installed-invalid"},
        "spec": {"start": "2030-01-01T02:00:00Z", "end": "2030-01-01T01:00:00Z"}
    }))?;
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    match windows.create(&dry_run, &invalid).await {
        Err(kube::Error::Api(status)) => ensure!(
            status.message.contains("lifeguard") || status.message.contains("denied the request"),
            "denied by lifeguard's webhook: {}",
            status.message
        ),
        other => anyhow::bail!("an invalid window must be denied by the webhook: {other:?}"),
    }
    Ok(())
}

/// The prober's token (patch any Node, create probe pods) is in the prober container only:
/// the workspace daemon beside it, a third-party program in production, finds no token
/// where in-cluster clients look, while the prober keeps reporting (its Node condition is
/// written with that token, see nodes.rs).
#[tokio::test]
async fn only_the_prober_container_holds_the_prober_token() -> anyhow::Result<()> {
    let client = client().await?;
    let pods: Api<Pod> = Api::namespaced(client, "lifeguard-system");
    let listed = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=lifeguard-workspace-node"))
        .await?;
    ensure!(!listed.items.is_empty(), "no node pods");
    for pod in &listed.items {
        let name = pod.name_any();
        let token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
        let out = std::process::Command::new("kubectl")
            .args([
                "-n",
                "lifeguard-system",
                "exec",
                &name,
                "-c",
                "workspace-daemon",
                "--",
            ])
            .args([
                "sh",
                "-c",
                &format!("test -e {token_file} && echo present || echo absent"),
            ])
            .output()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        ensure!(
            out.status.success() && stdout.trim() == "absent",
            "{name}/workspace-daemon: token {} ({})",
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr)
        );
        let prober = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.iter().find(|c| c.name == "prober"))
            .context("prober container")?;
        ensure!(
            prober
                .volume_mounts
                .iter()
                .flatten()
                .any(|m| m.mount_path == "/var/run/secrets/kubernetes.io/serviceaccount"),
            "{name}/prober: token mounted"
        );
    }
    Ok(())
}
