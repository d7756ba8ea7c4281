//! The admission webhook as the real API server uses it (installed by `./local-up`).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::workspace::Workspace;
use lifeguard_e2e::{
    BUSYBOX_IMAGE, apply_crds, close_window, open_window, poll_until, unique_name, with_namespace,
    workspace,
};
use serde_json::{Value, json};

/// A pod that is never started: bound to a node that does not exist.
fn parked_pod(name: &str, labels: Value, finalizers: Value) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "finalizers": finalizers},
        "spec": {"nodeName": "e2e-nowhere", "containers": [{"name": "ide", "image": BUSYBOX_IMAGE}]}
    }))?)
}

fn denial(result: Result<impl std::fmt::Debug, kube::Error>) -> anyhow::Result<(u16, String)> {
    match result {
        Err(kube::Error::Api(status)) => Ok((status.code, status.message)),
        other => anyhow::bail!("expected a denial from the API server, got {other:?}"),
    }
}

async fn release_pod(pods: &Api<Pod>, name: &str) -> anyhow::Result<()> {
    pods.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    pods.delete(name, &DeleteParams::default().grace_period(0))
        .await?;
    Ok(())
}

#[tokio::test]
async fn active_window_denies_workspace_starts_until_it_ends() {
    with_namespace("window", |client, ns| async move {
        apply_crds(&client).await?;
        let opened = Timestamp::now();
        let window = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(12),
            json!({}),
            json!({}),
        )
        .await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);

        let (code, message) = denial(
            workspaces
                .create(&PostParams::default(), &workspace("alice").build()?)
                .await,
        )?;
        assert_eq!(code, 403, "{message}");
        assert!(message.contains(&window), "names the window: {message}");
        assert!(
            message.contains("cluster upgrade in progress"),
            "shows its message: {message}"
        );
        assert!(message.contains("until 20"), "says when it ends: {message}");

        let ws_pod = parked_pod(
            "ws-alice",
            json!({"lifeguard.dev/workspace": "alice"}),
            json!([]),
        )?;
        let (code, message) = denial(pods.create(&PostParams::default(), &ws_pod).await)?;
        assert_eq!(code, 403, "{message}");
        assert!(message.contains("workspace pods cannot start"), "{message}");

        let plain = parked_pod("web", json!({"app": "web"}), json!([]))?;
        pods.create(&PostParams::default(), &plain).await?;

        // Same create after the window's end: admitted, without touching the window.
        let created = poll_until(
            "admitted once the window ends",
            Duration::from_secs(40),
            async || match workspaces
                .create(&PostParams::default(), &workspace("alice").build()?)
                .await
            {
                Ok(_) => Ok(Some(Timestamp::now())),
                Err(kube::Error::Api(s)) if s.code == 403 => Ok(None),
                Err(e) => Err(e.into()),
            },
        )
        .await;
        close_window(&client, &window).await;
        let admitted_at = created?;
        // The window's end is stored to the second (RFC 3339 without a fraction), so it
        // lies between 11 and 12 s after `opened`.
        assert!(
            admitted_at >= opened + SignedDuration::from_secs(11),
            "admitted only after the window's end ({admitted_at}, opened {opened})"
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn workspace_pods_get_the_disposal_finalizer_next_to_foreign_ones() {
    with_namespace("finalizer", |client, ns| async move {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let labels = json!({"lifeguard.dev/workspace": "bob"});
        let pod = parked_pod("ws-bob", labels.clone(), json!(["example.com/keep"]))?;
        let created = pods.create(&PostParams::default(), &pod).await?;
        let bare = pods
            .create(
                &PostParams::default(),
                &parked_pod("ws-carol", labels, json!([]))?,
            )
            .await?;
        let plain = pods
            .create(
                &PostParams::default(),
                &parked_pod("web", json!({}), json!([]))?,
            )
            .await?;
        release_pod(&pods, "ws-bob").await?;
        release_pod(&pods, "ws-carol").await?;
        assert_eq!(
            created.metadata.finalizers,
            Some(vec![
                "example.com/keep".to_string(),
                "lifeguard.dev/disposal".to_string()
            ]),
            "ours is appended, the foreign one stays first"
        );
        assert_eq!(
            bare.metadata.finalizers,
            Some(vec!["lifeguard.dev/disposal".to_string()])
        );
        assert_eq!(
            plain.metadata.finalizers, None,
            "non-workspace pods are untouched"
        );
        Ok(())
    })
    .await;
}

/// The create's answer is the object as stored at creation, before any controller could
/// patch it: a finalizer there was stamped by the mutating webhook.
#[tokio::test]
async fn a_new_workspace_is_stored_with_the_controller_finalizer_next_to_foreign_ones() {
    with_namespace("ws-finalizer", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let plain = workspaces
            .create(&PostParams::default(), &workspace("alice").build()?)
            .await?;
        let mut with_foreign = workspace("bob").build()?;
        with_foreign.metadata.finalizers = Some(vec!["example.com/keep".into()]);
        let kept = workspaces
            .create(&PostParams::default(), &with_foreign)
            .await?;
        // The foreign finalizer would hold the namespace's deletion: take it off first,
        // keeping the controller's (a write that lost a race with its status write retries).
        poll_until(
            "bob's foreign finalizer is off",
            Duration::from_secs(30),
            || {
                let workspaces = workspaces.clone();
                async move {
                    let current = workspaces.get("bob").await?;
                    let rest: Vec<&String> = current
                        .finalizers()
                        .iter()
                        .filter(|f| *f != "example.com/keep")
                        .collect();
                    let patch = json!({"metadata": {
                    "resourceVersion": current.resource_version(), "finalizers": rest}});
                    let done = workspaces
                        .patch("bob", &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .is_ok();
                    Ok(done.then_some(()))
                }
            },
        )
        .await?;
        assert_eq!(
            plain.metadata.finalizers,
            Some(vec!["lifeguard.dev/workspace".to_string()])
        );
        assert_eq!(
            kept.metadata.finalizers,
            Some(vec![
                "example.com/keep".to_string(),
                "lifeguard.dev/workspace".to_string()
            ]),
            "ours is appended, the foreign one stays first"
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn invalid_maintenance_window_is_denied_with_the_reason() {
    with_namespace("invalid", |client, _ns| async move {
        apply_crds(&client).await?;
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let window: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": unique_name("e2e-bad")},
            "spec": {"schedule": "0 22 * * 6", "duration": "2h", "timeZone": "Mars/Olympus_Mons"}
        }))?;
        let (code, message) = denial(windows.create(&PostParams::default(), &window).await)?;
        assert_eq!(code, 422, "{message}");
        assert!(message.contains("spec.timeZone"), "{message}");
        assert!(message.contains("Mars/Olympus_Mons"), "{message}");
        Ok(())
    })
    .await;
}

/// Schedules as the real API server admits them through the webhook: one copied from a
/// CronJob goes in, one whose day-of-month list hides an out-of-range value is refused
/// (it was read as `*` before), and one with lifeguard's `L` extension goes in with a
/// warning that kubectl prints.
#[tokio::test]
async fn schedules_are_admitted_as_a_cronjob_would_be_with_a_warning_for_the_extension() {
    with_namespace("schedules", |client, _ns| async move {
        apply_crds(&client).await?;
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let window = |name: &str, schedule: &str| -> anyhow::Result<MaintenanceWindow> {
            Ok(serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"schedule": schedule, "duration": "1h", "suspend": true}
            }))?)
        };
        let copied = unique_name("e2e-cronjob-schedule");
        let refused = unique_name("e2e-bad-day-list");
        let extended = unique_name("e2e-month-end");
        let outcome = async {
            windows
                .create(&PostParams::default(), &window(&copied, "@weekly")?)
                .await?;
            windows
                .create(
                    &PostParams::default(),
                    &window(&copied.replace("cronjob", "step"), "0/15 3 * * MON/2")?,
                )
                .await?;
            let (code, message) = denial(
                windows
                    .create(&PostParams::default(), &window(&refused, "0 0 *,99 * *")?)
                    .await,
            )?;
            assert_eq!(code, 422, "{message}");
            assert!(
                message.contains("day-of-month: \"99\" goes above the maximum 31"),
                "{message}"
            );
            let manifest = serde_json::to_string(&window(&extended, "0 22 L * *")?)?;
            let mut kubectl = std::process::Command::new("kubectl")
                .args(["create", "-f", "-"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()?;
            if let Some(mut stdin) = kubectl.stdin.take() {
                use std::io::Write;
                stdin.write_all(manifest.as_bytes())?;
            }
            let out = kubectl.wait_with_output()?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            anyhow::ensure!(out.status.success(), "kubectl create failed: {stderr}");
            anyhow::ensure!(
                stderr.contains(
                    "Warning: spec.schedule uses lifeguard's extension L (last day of the month)"
                ),
                "no warning from kubectl: {stderr}"
            );
            Ok(())
        }
        .await;
        for name in [&copied, &copied.replace("cronjob", "step"), &extended] {
            let _ = windows.delete(name, &DeleteParams::default()).await;
        }
        outcome
    })
    .await;
}

/// Exemption from admission is by namespace *name*, set in the webhook configurations by a
/// cluster admin: a tenant who labels its own namespace with the old opt-out label
/// (`lifeguard.dev/admission=disabled`) is still gated by an active window.
#[tokio::test]
async fn a_namespace_label_does_not_switch_admission_off() {
    with_namespace("optout", |client, ns| async move {
        apply_crds(&client).await?;
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        namespaces
            .patch(
                &ns,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"labels": {"lifeguard.dev/admission": "disabled"}}}),
                ),
            )
            .await?;
        let window = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(120),
            json!({}),
            json!({}),
        )
        .await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let outcome = denial(
            workspaces
                .create(&PostParams::default(), &workspace("tenant").build()?)
                .await,
        );
        close_window(&client, &window).await;
        let (code, message) = outcome?;
        assert_eq!(code, 403, "{message}");
        assert!(message.contains(&window), "names the window: {message}");
        Ok(())
    })
    .await;
}
