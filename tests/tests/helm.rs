//! lifeguard installed with Helm (charts/lifeguard, the helm cluster/build-helm.sh builds)
//! in place of the kustomize install: a workspace starts and a window denies one through
//! it, `helm upgrade` of a webhook value fails no admission while it rolls the webhook,
//! `helm rollback` and `helm test` work, and the documented removal leaves no Terminating
//! pod, no Workspace and no webhook configuration behind. Then `./local-up` installs
//! lifeguard again for whatever runs next. Disruptive: `test-all` runs it alone with the
//! other #[ignore]d tests.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use jiff::SignedDuration;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::names::POD_FINALIZER;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Admissions, Component, E2E_NAMESPACE_LABEL, LIFEGUARD_NAMESPACE, arg_value, client,
    close_window, create_usable_namespace, declared_container, documented_block, open_window,
    poll_until, repo, repo_script, run_documented, unique_name, wait_phase, wait_ready_pods,
    wait_settled, without_cargo_variables, workspace,
};
use serde_json::json;

const RELEASE: &str = "lifeguard";
const CHART: &str = "charts/lifeguard";
/// The local overlay's settings as values (manifests/local's counterpart).
const LOCAL_VALUES: &str = "charts/lifeguard/ci/local-values.yaml";
/// Where local-up writes the kustomization it applied (cluster/lifeguard.sh).
const KUSTOMIZATION: &str = "/var/lib/lifeguard-cluster/install";
const CLI: &str = env!("CARGO_BIN_EXE_lifeguard-cli");

/// The helm binary, built (or found cached) by cluster/build-helm.sh.
fn helm_binary() -> anyhow::Result<String> {
    let out = without_cargo_variables(&mut Command::new("bash"))
        .args([
            "-euo",
            "pipefail",
            "-c",
            ". cluster/common.sh; . cluster/config.sh; cluster/build-helm.sh >&2; printf %s \"$LG_HELM_BIN/helm\"",
        ])
        .current_dir(repo())
        .output()
        .context("running cluster/build-helm.sh")?;
    ensure!(
        out.status.success(),
        "cluster/build-helm.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

struct Helm(String);

impl Helm {
    /// Runs helm in the repository against the release's namespace; its stdout.
    fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = without_cargo_variables(&mut Command::new(&self.0))
            .args(args)
            .args(["--namespace", LIFEGUARD_NAMESPACE])
            .current_dir(repo())
            .output()
            .with_context(|| format!("running helm {args:?}"))?;
        if !out.status.success() {
            bail!(
                "helm {args:?} failed ({}):\n{}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// `--set-string` arguments that point the chart at the images local-up built and imported.
async fn installed_images(client: &Client) -> anyhow::Result<Vec<String>> {
    let mut sets = Vec::new();
    for (component, key) in [
        (Component::Webhook, "webhook"),
        (Component::Controller, "controller"),
        (Component::Prober, "prober"),
    ] {
        let image = declared_container(client, component)
            .await?
            .image
            .context("no image")?;
        let (repository, tag) = image.rsplit_once(':').context("image without a tag")?;
        sets.push(format!("images.{key}.repository={repository}"));
        sets.push(format!("images.{key}.tag={tag}"));
    }
    Ok(sets)
}

/// The release's namespace as the chart's README says to create it.
async fn release_namespace(client: &Client) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {
        "name": LIFEGUARD_NAMESPACE,
        "labels": {"pod-security.kubernetes.io/enforce": "privileged",
                   "pod-security.kubernetes.io/enforce-version": "latest"}}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    Ok(())
}

/// A dry-run Workspace create that the webhook admits: the API server reaches it.
async fn webhook_admits(client: &Client, ns: &str) -> anyhow::Result<()> {
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let workspaces = &workspaces;
    let dry_run = &dry_run;
    poll_until(
        "the webhook admits through its Service",
        Duration::from_secs(120),
        || async move {
            let ws = workspace("probe").build()?;
            Ok(workspaces.create(dry_run, &ws).await.ok().map(|_| ()))
        },
    )
    .await
}

/// timeoutSeconds of every webhook of lifeguard-validate.
async fn webhook_timeouts(client: &Client) -> anyhow::Result<Vec<i32>> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let config = api.get("lifeguard-validate").await?;
    Ok(config
        .webhooks
        .unwrap_or_default()
        .iter()
        .map(|w| w.timeout_seconds.unwrap_or_default())
        .collect())
}

async fn certificate_check_interval(client: &Client) -> anyhow::Result<Option<String>> {
    let container = declared_container(client, Component::Webhook).await?;
    Ok(arg_value(&container, "--certificate-check-interval"))
}

/// Everything the test does with lifeguard installed by Helm, up to the documented removal.
async fn with_helm(client: &Client, helm: &Helm, ns: &str) -> anyhow::Result<()> {
    // A workspace starts, and a window denies a start.
    let workspaces: Api<Workspace> = Api::namespaced(client.clone(), ns);
    webhook_admits(client, ns).await?;
    workspaces
        .create(&PostParams::default(), &workspace("first").build()?)
        .await?;
    wait_phase(
        &workspaces,
        "first",
        WorkspacePhase::Running,
        Duration::from_secs(120),
    )
    .await?;
    let window = open_window(
        client,
        ns,
        SignedDuration::from_mins(10),
        json!({}),
        json!({}),
    )
    .await?;
    let denied = workspaces
        .create(&PostParams::default(), &workspace("denied").build()?)
        .await;
    close_window(client, &window).await;
    match denied {
        Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains(&window) => {}
        other => bail!("a start during window {window} was not denied by it: {other:?}"),
    }

    // An upgrade that rolls the webhook, under a stream of admissions.
    let load = Admissions::start(client, ns, 3);
    let upgraded = helm.run(&[
        "upgrade",
        RELEASE,
        CHART,
        "--reuse-values",
        "--set",
        "webhook.timeoutSeconds=7",
        "--set-json",
        r#"webhook.extraArgs=["--certificate-check-interval=6s"]"#,
        "--wait",
        "--timeout",
        "5m",
    ]);
    let rolled = match upgraded {
        Ok(_) => wait_ready_pods(client, Component::Webhook, 2, Duration::from_secs(120))
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    let (admitted, failures) = load.finish().await?;
    rolled?;
    println!("helm upgrade: {admitted} admissions while the webhook rolled");
    ensure!(
        failures.is_empty(),
        "{} of {admitted} admissions failed during helm upgrade: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    ensure!(
        admitted > 20,
        "traffic kept flowing: only {admitted} admissions"
    );
    ensure!(
        webhook_timeouts(client).await?.iter().all(|&t| t == 7),
        "the upgrade set timeoutSeconds 7 on every webhook"
    );
    ensure!(
        certificate_check_interval(client).await?.as_deref() == Some("6s"),
        "the upgrade rolled the webhook with its new flag"
    );

    // Back to the first revision.
    helm.run(&["rollback", RELEASE, "1", "--wait", "--timeout", "5m"])?;
    wait_ready_pods(client, Component::Webhook, 2, Duration::from_secs(120)).await?;
    ensure!(
        webhook_timeouts(client).await?.iter().all(|&t| t == 5),
        "the rollback restored timeoutSeconds 5"
    );
    ensure!(
        certificate_check_interval(client).await?.as_deref() == Some("5s"),
        "the rollback restored the local values' flag"
    );

    // The chart's own test; its hook objects go once it passed.
    let tested = helm.run(&["test", RELEASE, "--timeout", "3m"])?;
    ensure!(tested.contains("Succeeded"), "helm test: {tested}");
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    ensure!(
        windows.get_opt("lifeguard-chart-test").await?.is_none(),
        "helm test's MaintenanceWindow is removed after it passed"
    );

    // The workspace lived through all of it.
    let first = workspaces.get("first").await?;
    ensure!(
        first.status.as_ref().and_then(|s| s.phase) == Some(WorkspacePhase::Running),
        "the workspace kept running through upgrade and rollback: {:?}",
        first.status
    );
    Ok(())
}

/// What the removal must not leave: pods being deleted or holding lifeguard's finalizer,
/// lifeguard's webhook configurations, or any webhook configuration whose Service is gone.
async fn leftovers(client: &Client) -> anyhow::Result<Vec<String>> {
    let mut left = Vec::new();
    let pods: Api<Pod> = Api::all(client.clone());
    for p in pods.list(&ListParams::default()).await?.items {
        if p.metadata.deletion_timestamp.is_some()
            || p.finalizers().iter().any(|f| f == POD_FINALIZER)
        {
            left.push(format!(
                "pod {}/{}",
                p.namespace().unwrap_or_default(),
                p.name_any()
            ));
        }
    }
    let services: Vec<(String, String)> = Api::<Service>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|s| (s.namespace().unwrap_or_default(), s.name_any()))
        .collect();
    let mut targets = Vec::new();
    for c in Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        for w in c.webhooks.iter().flatten() {
            targets.push((c.name_any(), w.client_config.service.clone()));
        }
    }
    for c in Api::<MutatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        for w in c.webhooks.iter().flatten() {
            targets.push((c.name_any(), w.client_config.service.clone()));
        }
    }
    for (config, service) in targets {
        if config.starts_with("lifeguard-") {
            left.push(format!("webhook configuration {config}"));
        } else if let Some(s) = service
            && !services.contains(&(s.namespace.clone(), s.name.clone()))
        {
            left.push(format!(
                "webhook configuration {config} calls the missing {}/{}",
                s.namespace, s.name
            ));
        }
    }
    if Api::<ClusterRole>::all(client.clone())
        .get_opt("lifeguard-webhook")
        .await?
        .is_some()
    {
        left.push("ClusterRole lifeguard-webhook".into());
    }
    Ok(left)
}

/// Waits until lifeguard's namespace is not being deleted, so that `./local-up` can create
/// in it again (its webhook pods take up to two minutes to stop, by design).
async fn namespace_gone(client: &Client) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespaces = &namespaces;
    poll_until(
        "lifeguard-system deleted or in use, not Terminating",
        Duration::from_secs(300),
        || async move {
            let ns = namespaces.get_opt(LIFEGUARD_NAMESPACE).await?;
            let terminating = ns.is_some_and(|n| n.metadata.deletion_timestamp.is_some());
            Ok((!terminating).then_some(()))
        },
    )
    .await
}

// Multi-threaded: helm runs as a blocking child process while the admission senders of the
// upgrade must keep going.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "disruptive: test-all runs it alone with --ignored --test-threads 1"]
async fn helm_installs_upgrades_rolls_back_tests_and_removes_lifeguard() -> anyhow::Result<()> {
    let helm = Helm(helm_binary()?);
    let client = client().await?;
    wait_settled(&client).await?;
    let images = installed_images(&client).await?;

    // The kustomize install goes, as docs/operations.md says to remove it.
    let outcome = async {
        run_documented(
            &documented_block("### Uninstall")?,
            &[("KUSTOMIZATION", KUSTOMIZATION)],
            CLI,
        )?;
        release_namespace(&client).await?;
        let mut install = vec!["install", RELEASE, CHART, "-f", LOCAL_VALUES];
        for set in &images {
            install.extend(["--set-string", set.as_str()]);
        }
        install.extend(["--wait", "--timeout", "5m"]);
        helm.run(&install)?;
        let ns = unique_name("e2e-helm");
        create_usable_namespace(&client, &ns, &[(E2E_NAMESPACE_LABEL, "true")]).await?;
        let used = with_helm(&client, &helm, &ns).await;
        let removed = run_documented(&documented_block("### Removing a Helm install")?, &[], CLI);
        let left = leftovers(&client).await?;
        let releases = helm.run(&[
            "list",
            "--short",
            "--deployed",
            "--failed",
            "--pending",
            "--uninstalling",
        ]);
        let crd_gone = Api::<Workspace>::all(client.clone())
            .list(&ListParams::default())
            .await
            .is_err();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let _ = namespaces.delete(&ns, &DeleteParams::background()).await;
        used?;
        removed?;
        ensure!(left.is_empty(), "left after the removal: {left:?}");
        let releases = releases?;
        ensure!(releases.trim().is_empty(), "helm still lists: {releases}");
        ensure!(
            crd_gone,
            "the Workspace CRD is gone, and every Workspace with it"
        );
        anyhow::Ok(())
    }
    .await;

    // Whatever happened: no release left to fight over the objects, and the kustomize
    // install back for whatever runs next.
    if let Err(e) = &outcome {
        eprintln!("helm test failed, restoring the kustomize install: {e:#}");
        let _ = helm.run(&["uninstall", RELEASE, "--wait", "--timeout", "3m"]);
    }
    namespace_gone(&client).await?;
    let reinstall = repo_script("local-up").output()?;
    ensure!(
        reinstall.status.success(),
        "./local-up did not reinstall lifeguard:\n{}\n{}",
        String::from_utf8_lossy(&reinstall.stdout),
        String::from_utf8_lossy(&reinstall.stderr)
    );
    outcome
}
