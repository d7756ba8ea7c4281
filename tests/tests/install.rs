//! The install manifests: the local overlay (manifests/node-scoped adapted to this machine) passes a
//! server-side dry run and changes only what must differ on this machine, the rendered
//! install keeps the hardening users expect, the optional monitoring kustomization renders,
//! and the alert rules pass `promtool`. tests/validate-manifests checks the install against
//! the schemas of Kubernetes 1.30 to 1.37; tests/tests/installed.rs checks what runs.

use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use lifeguard_e2e::{LOCAL_KUBECONFIG, repo};
use serde::Deserialize;
use serde_json::Value;

fn kubeconfig() -> String {
    std::env::var("KUBECONFIG").unwrap_or_else(|_| LOCAL_KUBECONFIG.to_string())
}

/// Runs a command in the repository; its stdout, or an error with both streams.
fn run(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(repo())
        .env("KUBECONFIG", kubeconfig())
        .output()
        .with_context(|| format!("running {program}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "{program} {} failed ({}):\n{stdout}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(stdout)
}

/// `kubectl kustomize DIR` as JSON objects.
fn render(dir: &str) -> anyhow::Result<Vec<Value>> {
    let yaml = run("kubectl", &["kustomize", dir])?;
    let mut objects = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&yaml) {
        let value = Value::deserialize(doc)?;
        if !value.is_null() {
            objects.push(value);
        }
    }
    Ok(objects)
}

fn named<'a>(objects: &'a [Value], kind: &str, name: &str) -> anyhow::Result<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .with_context(|| format!("no {kind} {name} in the rendered manifests"))
}

#[test]
fn local_overlay_passes_a_server_side_dry_run() {
    let out = run(
        "kubectl",
        &["apply", "-k", "manifests/local", "--dry-run=server"],
    )
    .unwrap();
    for object in [
        "namespace/lifeguard-system",
        "customresourcedefinition.apiextensions.k8s.io/workspaces.lifeguard.dev",
        "customresourcedefinition.apiextensions.k8s.io/maintenancewindows.lifeguard.dev",
        "deployment.apps/lifeguard-webhook",
        "deployment.apps/lifeguard-controller",
        "daemonset.apps/lifeguard-workspace-node",
        "poddisruptionbudget.policy/lifeguard-webhook",
        "poddisruptionbudget.policy/lifeguard-controller",
        "service/lifeguard-webhook",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/lifeguard-validate",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/lifeguard-mutate",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("{object} ")) && l.ends_with("(server dry run)")),
            "{object} missing from the dry run:\n{out}"
        );
    }
}

/// Every JSON path (`/a/b/0/c`) at which `a` and `b` differ, leaves only.
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (va, vb) = (
                    x.get(key).unwrap_or(&Value::Null),
                    y.get(key).unwrap_or(&Value::Null),
                );
                differences(&format!("{path}/{key}"), va, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}/{i}"), va, vb, out);
            }
        }
        _ if a != b => out.push(path.to_string()),
        _ => {}
    }
}

/// What the local overlay may change: images (imported, never pulled), intervals and
/// other arguments, the workspace storage path, and the real nodes only. Anything else
/// would make the local run test something users do not install.
fn allowed_locally(kind: &str, path: &str) -> bool {
    let container_field = |field: &str| {
        path.starts_with("/spec/template/spec/containers/") && path.split('/').nth(6) == Some(field)
    };
    match kind {
        "Deployment" | "DaemonSet" => {
            container_field("image")
                || container_field("imagePullPolicy")
                || container_field("args")
                || path.starts_with("/spec/template/spec/volumes/0/hostPath")
                || path.starts_with("/spec/template/spec/nodeSelector")
        }
        _ => false,
    }
}

#[test]
fn the_local_overlay_changes_only_what_must_differ_here() {
    check_overlay().unwrap();
}

fn check_overlay() -> anyhow::Result<()> {
    // The local cluster is 1.30+, so it installs what manifests/node-scoped installs.
    let install = render("manifests/node-scoped")?;
    let local = render("manifests/local")?;
    ensure!(
        install.len() == local.len(),
        "the overlay adds or drops objects"
    );
    let mut unexpected = Vec::new();
    for object in &local {
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let base = named(&install, kind, name)?;
        let mut diffs = Vec::new();
        differences("", base, object, &mut diffs);
        unexpected.extend(
            diffs
                .into_iter()
                .filter(|p| !allowed_locally(kind, p))
                .map(|p| format!("{kind}/{name}: {p}")),
        );
    }
    ensure!(
        unexpected.is_empty(),
        "the local overlay changes more than it may: {unexpected:#?}"
    );
    Ok(())
}

#[test]
fn installed_workloads_are_hardened_and_scraped() {
    check_workloads().unwrap();
}

fn check_workloads() -> anyhow::Result<()> {
    let objects = render("manifests/install")?;
    for name in ["lifeguard-webhook", "lifeguard-controller"] {
        let deploy = named(&objects, "Deployment", name)?;
        ensure!(deploy["spec"]["replicas"] == 2, "{name}: 2 replicas");
        let pod = &deploy["spec"]["template"]["spec"];
        let spread = pod["topologySpreadConstraints"]
            .as_array()
            .is_some_and(|c| {
                c.iter().any(|c| {
                    c["topologyKey"] == "kubernetes.io/hostname"
                        && c["whenUnsatisfiable"] == "DoNotSchedule"
                        && c["maxSkew"] == 1
                })
            });
        let anti = &pod["affinity"]["podAntiAffinity"];
        // The webhook's availability is every workspace start's (failurePolicy Fail): its
        // replicas are spread by a rule the scheduler enforces, not a preference.
        if name == "lifeguard-webhook" {
            ensure!(
                spread,
                "{name}: replicas spread across nodes (DoNotSchedule)"
            );
            // The webhook's stop: 5 s of --shutdown-delay, then up to 100 s
            // (`lifeguard_webhook::flags::STOP_GRACE`) for the API server to close its idle
            // connections. Killed sooner, it would close them under a POST (EOF).
            let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap_or(30);
            ensure!(
                grace >= 5 + 100 + 5,
                "{name}: terminationGracePeriodSeconds {grace} covers the webhook's stop"
            );
        } else {
            ensure!(!anti.is_null() || spread, "{name}: replicas kept apart");
        }
        let pdb = named(&objects, "PodDisruptionBudget", name)?;
        ensure!(
            pdb["apiVersion"] == "policy/v1",
            "{name}: the PDB API current Kubernetes serves (policy/v1beta1 is gone since 1.25)"
        );
        ensure!(
            pdb["spec"]["selector"] == deploy["spec"]["selector"],
            "{name}: the PDB selects the Deployment's pods"
        );
    }
    named(&objects, "DaemonSet", "lifeguard-workspace-node")?;
    let workloads = objects
        .iter()
        .filter(|o| o["kind"] == "Deployment" || o["kind"] == "DaemonSet");
    let mut seen = 0;
    for workload in workloads {
        seen += 1;
        let name = workload["metadata"]["name"].as_str().unwrap_or_default();
        let template = &workload["spec"]["template"];
        let annotations = &template["metadata"]["annotations"];
        ensure!(
            annotations["prometheus.io/scrape"] == "true"
                && annotations["prometheus.io/port"].is_string(),
            "{name}: Prometheus scrape annotations"
        );
        let pod = &template["spec"];
        for c in pod["containers"].as_array().context("containers")? {
            let cname = c["name"].as_str().unwrap_or_default();
            let sc = &c["securityContext"];
            ensure!(
                sc["readOnlyRootFilesystem"] == true,
                "{name}/{cname}: read-only root filesystem"
            );
            ensure!(
                sc["allowPrivilegeEscalation"] == false,
                "{name}/{cname}: no privilege escalation"
            );
            ensure!(
                !c["resources"]["requests"].is_null() && !c["resources"]["limits"].is_null(),
                "{name}/{cname}: resource requests and limits"
            );
            // The prober alone runs as uid 0, without any capability, because uid 0 owns
            // the node's workspace storage (docs/prober.md).
            let non_root =
                sc["runAsNonRoot"] == true || pod["securityContext"]["runAsNonRoot"] == true;
            ensure!(
                non_root || (cname == "prober" && sc["capabilities"]["drop"][0] == "ALL"),
                "{name}/{cname}: non-root"
            );
        }
    }
    ensure!(seen == 3, "webhook, controller and prober workloads");
    check_pod_level_hardening(&objects)?;
    for kind in ["ClusterRoleBinding", "RoleBinding"] {
        for binding in objects.iter().filter(|o| o["kind"] == kind) {
            for subject in binding["subjects"].as_array().context("subjects")? {
                ensure!(
                    subject["kind"] == "ServiceAccount",
                    "{kind} {}: binds only service accounts, not {subject}",
                    binding["metadata"]["name"]
                );
            }
        }
    }
    for name in [
        "lifeguard-webhook",
        "lifeguard-controller",
        "lifeguard-workspace-node",
    ] {
        let svc = named(&objects, "Service", name)?;
        ensure!(
            svc["metadata"]["labels"]["lifeguard.dev/job"].is_string(),
            "Service {name}: the job label the ServiceMonitors use"
        );
    }
    Ok(())
}

/// Issue 25: seccomp on every pod, the prober's token in the prober container only, a
/// NetworkPolicy for every workload, Pod Security labels on every namespace.
fn check_pod_level_hardening(objects: &[Value]) -> anyhow::Result<()> {
    const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let workloads = objects
        .iter()
        .filter(|o| o["kind"] == "Deployment" || o["kind"] == "DaemonSet");
    for workload in workloads {
        let name = workload["metadata"]["name"].as_str().unwrap_or_default();
        let pod = &workload["spec"]["template"]["spec"];
        ensure!(
            pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault",
            "{name}: pod-level seccompProfile RuntimeDefault"
        );
        let labels = &workload["spec"]["template"]["metadata"]["labels"];
        let policed = objects.iter().any(|o| {
            o["kind"] == "NetworkPolicy"
                && o["metadata"]["namespace"] == workload["metadata"]["namespace"]
                && o["spec"]["podSelector"]["matchLabels"]
                    .as_object()
                    .is_some_and(|m| m.iter().all(|(k, v)| &labels[k] == v))
        });
        ensure!(policed, "{name}: a NetworkPolicy selects its pods");
    }
    let node = named(objects, "DaemonSet", "lifeguard-workspace-node")?;
    let pod = &node["spec"]["template"]["spec"];
    ensure!(
        pod["automountServiceAccountToken"] == false,
        "node pods: no token for every container"
    );
    for c in pod["containers"].as_array().context("containers")? {
        let mounts_token = c["volumeMounts"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["mountPath"] == TOKEN_PATH));
        ensure!(
            mounts_token == (c["name"] == "prober"),
            "node pods/{}: only the prober mounts the prober's token",
            c["name"]
        );
    }
    for namespace in objects.iter().filter(|o| o["kind"] == "Namespace") {
        ensure!(
            namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].is_string(),
            "Namespace {}: a Pod Security enforce label",
            namespace["metadata"]["name"]
        );
    }
    Ok(())
}

/// With cert-manager the webhook neither writes its Secret nor its configurations' CA
/// bundle, so it keeps no right to either.
#[test]
fn the_cert_manager_variant_drops_the_certificate_rights() {
    let objects = render("manifests/cert-manager").unwrap();
    assert!(
        !objects
            .iter()
            .any(|o| (o["kind"] == "Role" || o["kind"] == "RoleBinding")
                && o["metadata"]["name"] == "lifeguard-webhook-certificate"),
        "the certificate Role is gone"
    );
    let role = named(&objects, "ClusterRole", "lifeguard-webhook").unwrap();
    let rules = role["rules"].as_array().cloned().unwrap_or_default();
    assert!(
        !rules
            .iter()
            .any(|r| r["apiGroups"][0] == "admissionregistration.k8s.io"),
        "no right on the webhook configurations: {rules:?}"
    );
    // What the webhook reads to decide (windows, namespaces) and to answer evictions (the
    // pod, its node, and the Workspace it records the eviction on): nothing else.
    let granted: Vec<(String, String)> = rules
        .iter()
        .flat_map(|r| {
            let verbs = r["verbs"].to_string();
            r["resources"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |res| (res.as_str().unwrap_or_default().to_string(), verbs.clone()))
        })
        .collect();
    let want = [
        ("maintenancewindows", r#"["get","list","watch"]"#),
        ("namespaces", r#"["get","list","watch"]"#),
        ("pods", r#"["get"]"#),
        ("workspaces", r#"["get","patch"]"#),
        ("nodes", r#"["get"]"#),
    ]
    .map(|(res, verbs)| (res.to_string(), verbs.to_string()));
    assert_eq!(
        granted, want,
        "the webhook's rights with cert-manager: {rules:?}"
    );
}

#[test]
fn monitoring_kustomization_renders_the_alert_rules() {
    check_monitoring().unwrap();
}

fn check_monitoring() -> anyhow::Result<()> {
    let objects = render("manifests/monitoring")?;
    let monitors = objects
        .iter()
        .filter(|o| o["kind"] == "ServiceMonitor")
        .count();
    ensure!(monitors == 2, "two ServiceMonitors, got {monitors}");
    let rule = named(&objects, "PrometheusRule", "lifeguard")?;
    let text = std::fs::read_to_string(repo().join("manifests/monitoring/alerts.yaml"))?;
    let alerts: Value = serde_yaml_ng::from_str(&text)?;
    ensure!(
        rule["spec"] == alerts,
        "manifests/monitoring/prometheusrule.yaml is stale: regenerate it from alerts.yaml (see its header)"
    );
    Ok(())
}

#[test]
fn alert_rules_pass_promtool() {
    let out = run(
        "promtool",
        &["check", "rules", "manifests/monitoring/alerts.yaml"],
    )
    .unwrap();
    assert!(out.contains("SUCCESS"), "{out}");
}

#[test]
fn every_alert_is_in_the_operations_alert_table() {
    check_alerts_documented().unwrap();
}

/// The runbook's alert table (docs/operations.md, "Alerts") and the rules file name the
/// same alerts, so a new rule cannot ship without saying what it means and what to do.
fn check_alerts_documented() -> anyhow::Result<()> {
    let text = std::fs::read_to_string(repo().join("manifests/monitoring/alerts.yaml"))?;
    let rules: Value = serde_yaml_ng::from_str(&text)?;
    let mut defined: Vec<String> = rules["groups"]
        .as_array()
        .context("alerts.yaml: groups")?
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["alert"].as_str().map(str::to_string))
        .collect();
    let docs = std::fs::read_to_string(repo().join("docs/operations.md"))?;
    let section = docs
        .split("\n## Alerts\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .context("docs/operations.md has no \"## Alerts\" section")?;
    let mut documented: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    defined.sort();
    documented.sort();
    let undocumented: Vec<_> = defined.iter().filter(|a| !documented.contains(a)).collect();
    let stale: Vec<_> = documented.iter().filter(|a| !defined.contains(a)).collect();
    ensure!(
        undocumented.is_empty() && stale.is_empty(),
        "docs/operations.md's alert table misses {undocumented:?} and lists alerts alerts.yaml lacks: {stale:?}"
    );
    ensure!(
        defined
            .iter()
            .any(|a| a == "LifeguardPodRejectedPermanently"),
        "the permanent-rejection alert is missing"
    );
    Ok(())
}
