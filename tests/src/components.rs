//! lifeguard's components as `local-up` installs them: pods in `lifeguard-system`, seen
//! from a test that must find them, scrape them, or kill one the way an outage would.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Client, ResourceExt};

use crate::wait::poll_until;

pub const LIFEGUARD_NAMESPACE: &str = "lifeguard-system";
/// The controller's leader-election Lease (its `--lease-name` default).
pub const CONTROLLER_LEASE: &str = "lifeguard-controller";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Webhook,
    Controller,
    Prober,
}

impl Component {
    /// The `app.kubernetes.io/name` of its pods (and the name of its workload).
    pub fn app(self) -> &'static str {
        match self {
            Self::Webhook => "lifeguard-webhook",
            Self::Controller => "lifeguard-controller",
            Self::Prober => "lifeguard-workspace-node",
        }
    }

    /// The container that runs the component's binary.
    pub fn container(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::Controller => "controller",
            Self::Prober => "prober",
        }
    }

    /// The plain-HTTP port of /healthz, /readyz and /metrics (or the prober's /status).
    pub fn ops_port(self) -> u16 {
        match self {
            Self::Webhook | Self::Controller => 8080,
            Self::Prober => 8089,
        }
    }

    pub fn selector(self) -> String {
        format!("app.kubernetes.io/name={}", self.app())
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The component's pods that are Ready and not being deleted, by name.
pub async fn ready_pods(client: &Client, component: Component) -> anyhow::Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let mut ready: Vec<Pod> = pods
        .list(&ListParams::default().labels(&component.selector()))
        .await?
        .items
        .into_iter()
        .filter(is_ready)
        .collect();
    ready.sort_by_key(|p| p.name_any());
    Ok(ready)
}

/// `http://<pod IP>:<ops port>`: pod IPs route from this machine (the node's bridge).
pub fn ops_url(pod: &Pod, component: Component) -> anyhow::Result<String> {
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .with_context(|| format!("pod {} has no IP yet", pod.name_any()))?;
    Ok(format!("http://{ip}:{}", component.ops_port()))
}

/// GET `url` with curl (bounded to 5 s); the body, or an error naming the URL.
pub fn http_get(url: &str) -> anyhow::Result<String> {
    let out = Command::new("curl")
        .args(["-fsS", "--max-time", "5", url])
        .output()
        .context("running curl")?;
    if !out.status.success() {
        bail!(
            "GET {url} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value of the sample `series` (name with its labels exactly as exposed, e.g.
/// `lifeguard_controller_leader` or `x_total{result="success"}`) in a metrics text.
pub fn metric_value(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok()).flatten()
    })
}

/// The sum of `series` over every Ready pod of the component.
pub async fn metric_sum(
    client: &Client,
    component: Component,
    series: &str,
) -> anyhow::Result<f64> {
    let mut sum = 0.0;
    for pod in ready_pods(client, component).await? {
        let text = http_get(&format!("{}/metrics", ops_url(&pod, component)?))?;
        sum += metric_value(&text, series).unwrap_or(0.0);
    }
    Ok(sum)
}

/// The workspace reconciles so far by action (`lifeguard_controller_reconciles_total`'s
/// `result` label), summed over every Ready controller pod.
pub async fn reconciles_by_action(
    client: &Client,
) -> anyhow::Result<std::collections::BTreeMap<String, f64>> {
    // One label (`result`): the action taken, or the error's reason.
    controller_series_by_label(client, "lifeguard_controller_reconciles_total").await
}

/// The value of the controller's series `name` by its one label's value, summed over the
/// Ready replicas (the leader's is the one that moves).
pub async fn controller_series_by_label(
    client: &Client,
    name: &str,
) -> anyhow::Result<std::collections::BTreeMap<String, f64>> {
    let series = format!("{name}{{");
    let mut by_label = std::collections::BTreeMap::new();
    for pod in ready_pods(client, Component::Controller).await? {
        let url = format!("{}/metrics", ops_url(&pod, Component::Controller)?);
        for line in http_get(&url)?.lines() {
            let Some(rest) = line.strip_prefix(series.as_str()) else {
                continue;
            };
            let (labels, value) = rest.rsplit_once(' ').unwrap_or_default();
            let label = labels
                .split_once("=\"")
                .map_or(labels, |(_, value)| value.trim_end_matches("\"}"));
            if let Ok(value) = value.parse::<f64>() {
                *by_label.entry(label.to_string()).or_insert(0.0) += value;
            }
        }
    }
    Ok(by_label)
}

/// The holder of the controller's leader Lease: the leading pod's name.
pub async fn controller_leader(client: &Client) -> anyhow::Result<Option<String>> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    Ok(leases
        .get_opt(CONTROLLER_LEASE)
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity))
}

/// The two Ready replicas as (leader, standby), once the Lease names one of them. After a
/// leader is killed the Lease names the dead pod until it expires: a test that kills or
/// stops "the leader" picks it here, not from the Lease alone.
pub async fn leader_and_standby(client: &Client) -> anyhow::Result<(Pod, Pod)> {
    let pods = &wait_ready_pods(client, Component::Controller, 2, Duration::from_secs(120)).await?;
    poll_until(
        "a Ready replica holds the Lease",
        Duration::from_secs(60),
        || async move {
            let holder = controller_leader(client).await?;
            let Some(holder) = holder else {
                return Ok(None);
            };
            let (leader, standby): (Vec<&Pod>, Vec<&Pod>) =
                pods.iter().partition(|p| p.name_any() == holder);
            Ok(match (leader.first(), standby.first()) {
                (Some(l), Some(s)) => Some(((*l).clone(), (*s).clone())),
                _ => None,
            })
        },
    )
    .await
}

/// Whether the pod's own metrics say it leads.
pub fn pod_says_it_leads(pod: &Pod) -> bool {
    ops_url(pod, Component::Controller)
        .and_then(|url| http_get(&format!("{url}/metrics")))
        .is_ok_and(|text| metric_value(&text, "lifeguard_controller_leader") == Some(1.0))
}

/// Deletes the pod with no grace period: its containers are SIGKILLed at once, as in a
/// crash or a lost node; nothing is released or cleaned up on the way out.
pub async fn kill_pod(client: &Client, name: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    pods.delete(name, &DeleteParams::default().grace_period(0))
        .await
        .with_context(|| format!("killing pod {name}"))?;
    Ok(())
}

/// Deletes the pod gracefully (SIGTERM, then the grace period), as a rollout or a drain.
pub async fn stop_pod(client: &Client, name: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    pods.delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting pod {name}"))?;
    Ok(())
}

/// The component's main container as its workload (Deployment or DaemonSet) declares it.
pub async fn declared_container(
    client: &Client,
    component: Component,
) -> anyhow::Result<Container> {
    let spec = match component {
        Component::Prober => {
            let api: Api<DaemonSet> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
            Some(api.get(component.app()).await?.spec.template)
        }
        _ => {
            let api: Api<Deployment> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
            Some(api.get(component.app()).await?.spec.template)
        }
    };
    spec.and_then(|t| t.spec)
        .and_then(|s| {
            s.containers
                .into_iter()
                .find(|c| c.name == component.container())
        })
        .with_context(|| {
            format!(
                "{} declares no {} container",
                component.app(),
                component.container()
            )
        })
}

/// The value of `--flag=value` (or `--flag value`) in the container's args, last one wins.
pub fn arg_value(container: &Container, flag: &str) -> Option<String> {
    let args = container.args.as_deref().unwrap_or_default();
    let prefix = format!("{flag}=");
    let mut found = None;
    for (i, arg) in args.iter().enumerate() {
        if let Some(value) = arg.strip_prefix(&prefix) {
            found = Some(value.to_string());
        } else if arg == flag {
            found = args.get(i + 1).cloned();
        }
    }
    found
}

/// Waits until the component runs `want` Ready pods, none of them being deleted.
pub async fn wait_ready_pods(
    client: &Client,
    component: Component,
    want: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Pod>> {
    let what = format!("{want} Ready {} pods", component.app());
    poll_until(&what, timeout, || async move {
        let pods = ready_pods(client, component).await?;
        Ok((pods.len() == want).then_some(pods))
    })
    .await
}

/// The pid, on this machine, of `binary` running in pod `pod` (the runtime sets HOSTNAME
/// to the pod's name in each container's environment). For benchmarks that read a
/// component's memory from /proc, and tests that must signal exactly one process.
pub fn local_pid(pod: &str, binary: &str) -> anyhow::Result<u32> {
    let hostname = format!("HOSTNAME={pod}");
    let suffix = format!("/{binary}");
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
        if !program.ends_with(suffix.as_bytes()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|kv| kv == hostname.as_bytes())
        {
            return Ok(pid);
        }
    }
    bail!("no {binary} process of pod {pod} on this machine")
}

/// POSTs an AdmissionReview straight to one webhook pod (https://<pod IP>:8443/validate,
/// the Service's target) and returns its `response`. Lets a test see what *each* replica
/// decides, since each decides from its own watch cache.
pub fn review_on(pod: &Pod, review: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    review_at(pod, "/validate", review)
}

/// As `review_on`, at `path` (`/validate` or `/mutate`).
pub fn review_at(
    pod: &Pod,
    path: &str,
    review: &serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .with_context(|| format!("pod {} has no IP yet", pod.name_any()))?;
    let out = Command::new("curl")
        .args([
            "-fsS",
            "--max-time",
            "5",
            // The replica's certificate names the Service, not the pod IP; this checks
            // decisions, and the TLS path is tested through the API server.
            "-k",
            "-H",
            "content-type: application/json",
            "--data-binary",
            "@-",
            &format!("https://{ip}:8443{path}"),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(review.to_string().as_bytes())?;
            }
            child.wait_with_output()
        })
        .context("running curl")?;
    if !out.status.success() {
        bail!(
            "review on {}: {}",
            pod.name_any(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(answer["response"].clone())
}

/// Waits until every webhook replica denies creating a Workspace in `namespace` because of
/// `window`: the window has reached each replica's cache.
pub async fn wait_window_enforced(
    client: &Client,
    namespace: &str,
    window: &str,
) -> anyhow::Result<()> {
    wait_window_enforced_for(client, namespace, window, serde_json::json!({})).await
}

/// As `wait_window_enforced`, for a Workspace carrying `labels` (a window with a
/// `workspaceSelector` covers only some).
pub async fn wait_window_enforced_for(
    client: &Client,
    namespace: &str,
    window: &str,
    labels: serde_json::Value,
) -> anyhow::Result<()> {
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "e2e-window-probe",
            "kind": {"group": "lifeguard.dev", "version": "v1alpha1", "kind": "Workspace"},
            "resource": {"group": "lifeguard.dev", "version": "v1alpha1", "resource": "workspaces"},
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "e2e"},
            "object": {
                "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                "metadata": {"name": "e2e-window-probe", "namespace": namespace, "labels": labels},
                "spec": {"podTemplate": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
            },
            "dryRun": true
        }
    });
    let review = &review;
    poll_until(
        &format!("every webhook replica enforces window {window} in {namespace}"),
        Duration::from_secs(30),
        || async move {
            let pods = ready_pods(client, Component::Webhook).await?;
            for pod in &pods {
                let response = review_on(pod, review)?;
                let message = response["status"]["message"].as_str().unwrap_or_default();
                if response["allowed"] != false || !message.contains(window) {
                    return Ok(None);
                }
            }
            Ok((!pods.is_empty()).then_some(()))
        },
    )
    .await
}

/// Sets the replicas of a component's Deployment (the webhook's or the controller's).
pub async fn scale(client: &Client, component: Component, replicas: i32) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let patch = serde_json::json!({"spec": {"replicas": replicas}});
    deployments
        .patch(
            component.app(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}
