//! Windows that fit a calendar (issue 26): exclusions, `maintenance skip`, and the `Warn`
//! and `DryRun` enforcement modes, through the real API server, webhook and controller.

use std::process::{Command, Stdio};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::names::{DRAINED_BY_ANNOTATION, POSTPONE_DRAIN_ANNOTATION};
use lifeguard_api::workspace::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Component, LOCAL_KUBECONFIG, NAMESPACE_LABEL, apply_crds, close_window, metric_sum,
    open_window, poll_until, ready_pods, review_at, review_on, rfc3339, unique_name, wait_phase,
    wait_window_enforced, window_event_messages, with_namespace, workspace,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);

/// The CLI against the local cluster (or `KUBECONFIG`): (exit code, stdout, stderr).
async fn lifeguard(args: &[&str]) -> anyhow::Result<(Option<i32>, String, String)> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lifeguard-cli"));
    if std::env::var_os("KUBECONFIG").is_none() {
        command.args(["--kubeconfig", LOCAL_KUBECONFIG]);
    }
    command.args(args);
    let output = tokio::task::spawn_blocking(move || command.output()).await??;
    let run = (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    eprintln!("$ lifeguard {}\n{run:#?}", args.join(" "));
    Ok(run)
}

/// `kubectl create -f -` of `object`: (success, stderr), for the warnings kubectl prints.
fn kubectl_create(object: &Value) -> anyhow::Result<(bool, String)> {
    let mut kubectl = Command::new("kubectl");
    if std::env::var_os("KUBECONFIG").is_none() {
        kubectl.args(["--kubeconfig", LOCAL_KUBECONFIG]);
    }
    let mut child = kubectl
        .args(["create", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(serde_json::to_string(object)?.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Waits until every webhook replica answers a dry-run Workspace CREATE in `ns` as
/// `accept` says: the window's latest spec has reached each replica's cache.
async fn wait_every_replica(
    client: &Client,
    ns: &str,
    what: &str,
    accept: impl Fn(&Value) -> bool,
) -> anyhow::Result<()> {
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "e2e-calendar-probe",
            "kind": {"group": "lifeguard.dev", "version": "v1alpha1", "kind": "Workspace"},
            "resource": {"group": "lifeguard.dev", "version": "v1alpha1", "resource": "workspaces"},
            "namespace": ns,
            "operation": "CREATE",
            "userInfo": {"username": "e2e"},
            "object": {
                "apiVersion": "lifeguard.dev/v1alpha1", "kind": "Workspace",
                "metadata": {"name": "e2e-calendar-probe", "namespace": ns},
                "spec": {"podTemplate": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
            },
            "dryRun": true
        }
    });
    let (review, accept) = (&review, &accept);
    poll_until(what, Duration::from_secs(30), || async move {
        let pods = ready_pods(client, Component::Webhook).await?;
        for pod in &pods {
            if !accept(&review_on(pod, review)?) {
                return Ok(None);
            }
        }
        Ok((!pods.is_empty()).then_some(()))
    })
    .await
}

fn allowed(response: &Value) -> bool {
    response["allowed"] == true
}

/// A daily window over namespace `ns` that opened five minutes ago and lasts an hour:
/// active now, far from its end, its next occurrence tomorrow. Returns once every webhook
/// replica denies with it.
async fn daily_window_active_now(client: &Client, ns: &str) -> anyhow::Result<String> {
    let opened = Timestamp::now() - SignedDuration::from_mins(5);
    let utc = opened.to_zoned(jiff::tz::TimeZone::UTC);
    let name = unique_name("e2e-daily");
    let window: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "schedule": format!("{} {} * * *", utc.minute(), utc.hour()),
            "duration": "1h",
            "message": "nightly maintenance",
            "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}},
        }
    }))?;
    Api::<MaintenanceWindow>::all(client.clone())
        .create(&PostParams::default(), &window)
        .await?;
    wait_window_enforced(client, ns, &name).await?;
    Ok(name)
}

/// The window's status once `ready` holds for it, written by the controller.
async fn wait_status(
    client: &Client,
    name: &str,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let ready = &ready;
    let windows = &windows;
    poll_until(what, Duration::from_secs(30), || async move {
        let window = windows.get(name).await?;
        let status = serde_json::to_value(window.status)?;
        Ok(ready(&status).then_some(status))
    })
    .await
}

#[tokio::test]
async fn an_exclusion_covering_now_admits_a_workspace_start() {
    with_namespace("exclusion", |client, ns| async move {
        apply_crds(&client).await?;
        let name = daily_window_active_now(&client, &ns).await?;
        let outcome = async {
            let now = Timestamp::now();
            let exclusion = json!({"spec": {"exclusions": [{
                "start": rfc3339(now - SignedDuration::from_mins(1)),
                "end": rfc3339(now + SignedDuration::from_mins(10)),
                "reason": "release week"
            }]}});
            Api::<MaintenanceWindow>::all(client.clone())
                .patch(&name, &PatchParams::default(), &Patch::Merge(&exclusion))
                .await?;
            wait_every_replica(&client, &ns, "every replica admits", allowed).await?;
            Api::<Workspace>::namespaced(client.clone(), &ns)
                .create(&PostParams::default(), &workspace("alice").build()?)
                .await?;
            let status = wait_status(&client, &name, "the status lists the skip", |s| {
                s["skippedOccurrences"][0]["reason"] == "release week"
            })
            .await?;
            assert_eq!(status["active"], false, "{status}");
            let next = status["nextOccurrence"]["start"]
                .as_str()
                .unwrap_or_default();
            let next: Timestamp = next.parse()?;
            assert!(next > now + SignedDuration::from_hours(23), "{status}");
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}

/// `maintenance skip --next` on a window in force skips that occurrence: it ends at once
/// (starts are admitted), `maintenance next` and the status say it is skipped and why,
/// and the next occurrence (tomorrow) stays. Skipping it again is refused.
#[tokio::test]
async fn skip_next_on_a_window_in_force_ends_that_occurrence_only() {
    with_namespace("skip", |client, ns| async move {
        apply_crds(&client).await?;
        let name = daily_window_active_now(&client, &ns).await?;
        let outcome = async {
            let (code, stdout, _) = lifeguard(&[
                "maintenance",
                "skip",
                &name,
                "--next",
                "--reason",
                "e2e: not tonight",
            ])
            .await?;
            anyhow::ensure!(code == Some(0), "skip failed: {stdout}");
            anyhow::ensure!(stdout.contains("skips the occurrence"), "{stdout}");
            wait_every_replica(&client, &ns, "every replica admits", allowed).await?;
            Api::<Workspace>::namespaced(client.clone(), &ns)
                .create(&PostParams::default(), &workspace("bob").build()?)
                .await?;
            let (code, stdout, _) =
                lifeguard(&["maintenance", "next", &name, "--count", "1", "-o", "json"]).await?;
            anyhow::ensure!(code == Some(0), "{stdout}");
            let listed: Value = serde_json::from_str(&stdout)?;
            let items = listed["items"].as_array().cloned().unwrap_or_default();
            anyhow::ensure!(
                items.len() == 2,
                "the skipped one, then tomorrow's: {listed}"
            );
            assert_eq!(items[0]["skipped"], true, "{listed}");
            assert_eq!(items[0]["skipReason"], "e2e: not tonight", "{listed}");
            assert_eq!(items[1]["skipped"], false, "{listed}");
            let (_, table, _) = lifeguard(&["maintenance", "next", &name, "--count", "1"]).await?;
            assert!(table.contains("skipped: e2e: not tonight"), "{table}");
            wait_status(&client, &name, "the status lists the skip", |s| {
                s["skippedOccurrences"][0]["reason"] == "e2e: not tonight" && s["active"] == false
            })
            .await?;
            let (_, status, _) = lifeguard(&["maintenance", "status", &name]).await?;
            assert!(
                status.contains("skipped: ") && status.contains("(e2e: not tonight)"),
                "{status}"
            );
            // Skipping the same occurrence again is refused (`--next` would now mean
            // tomorrow's, so it is named by an instant inside it).
            let inside = rfc3339(Timestamp::now());
            let (code, _, stderr) =
                lifeguard(&["maintenance", "skip", &name, "--on", &inside]).await?;
            assert_ne!(code, Some(0), "{stderr}");
            assert!(stderr.contains("already skipped"), "{stderr}");
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}

#[tokio::test]
async fn a_warn_window_admits_with_the_warning_kubectl_prints() {
    with_namespace("warn", |client, ns| async move {
        apply_crds(&client).await?;
        let name = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(600),
            json!({}),
            json!({}),
        )
        .await?;
        let outcome = async {
            Api::<MaintenanceWindow>::all(client.clone())
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"enforcement": "Warn"}})),
                )
                .await?;
            let warned = |r: &Value| allowed(r) && r["warnings"].to_string().contains(&name);
            wait_every_replica(&client, &ns, "every replica warns", warned).await?;
            let mut ws = serde_json::to_value(workspace("carol").build()?)?;
            ws["metadata"]["namespace"] = json!(ns);
            let (created, stderr) = kubectl_create(&ws)?;
            anyhow::ensure!(created, "kubectl create failed: {stderr}");
            anyhow::ensure!(
                stderr.contains("Warning: maintenance window")
                    && stderr.contains(&name)
                    && stderr.contains("cluster upgrade in progress"),
                "kubectl printed no warning naming the window: {stderr}"
            );
            let (_, table, _) = lifeguard(&["maintenance", "status", &name]).await?;
            assert!(table.contains("Warn"), "{table}");
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}

#[tokio::test]
async fn a_dry_run_window_admits_and_counts_what_it_would_have_denied_and_drained() {
    with_namespace("dryrun", |client, ns| async move {
        apply_crds(&client).await?;
        let name = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(600),
            json!({"drain": true}),
            json!({}),
        )
        .await?;
        let outcome = async {
            Api::<MaintenanceWindow>::all(client.clone())
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"enforcement": "DryRun"}})),
                )
                .await?;
            let silent = |r: &Value| allowed(r) && r["warnings"].is_null();
            wait_every_replica(&client, &ns, "every replica admits silently", silent).await?;
            let series = format!("lifeguard_webhook_would_deny_total{{window=\"{name}\"}}");
            let before = metric_sum(&client, Component::Webhook, &series).await?;
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
            workspaces
                .create(&PostParams::default(), &workspace("dave").build()?)
                .await?;
            let after = metric_sum(&client, Component::Webhook, &series).await?;
            assert!(after >= before + 1.0, "{series}: {before} -> {after}");
            let status = wait_status(&client, &name, "dryRun.wouldDrain counts dave", |s| {
                s["dryRun"]["wouldDrain"] == 1
            })
            .await?;
            assert!(status["workspacesRemaining"].is_null(), "{status}");
            let gauge = format!("lifeguard_controller_would_drain{{window=\"{name}\"}}");
            let (client_ref, gauge_ref) = (&client, &gauge);
            poll_until(
                "the controller gauge",
                Duration::from_secs(30),
                || async move {
                    let v = metric_sum(client_ref, Component::Controller, gauge_ref).await?;
                    Ok((v == 1.0).then_some(()))
                },
            )
            .await?;
            let dave = workspaces.get("dave").await?;
            assert!(
                !dave
                    .metadata
                    .annotations
                    .unwrap_or_default()
                    .contains_key(DRAINED_BY_ANNOTATION),
                "a DryRun window asks nobody to stop"
            );
            let (_, table, _) = lifeguard(&["maintenance", "status", &name]).await?;
            assert!(
                table.contains("DryRun") && table.contains("1 (would drain)"),
                "{table}"
            );
            let _ = workspaces.delete("dave", &DeleteParams::default()).await;
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}

/// A node-scoped window steers covered workspace pods off its nodes by node affinity; in
/// `DryRun` it must not: trying a node pool's window moves no pod.
#[tokio::test]
async fn a_node_scoped_dry_run_window_steers_no_pod() {
    with_namespace("dryrunnodes", |client, ns| async move {
        apply_crds(&client).await?;
        let name = unique_name("e2e-pool");
        let now = Timestamp::now();
        let window: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "start": rfc3339(now - SignedDuration::from_secs(60)),
                "end": rfc3339(now + SignedDuration::from_secs(600)),
                "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}},
                "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "e2e-no-such-node"}},
            }
        }))?;
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        windows.create(&PostParams::default(), &window).await?;
        let outcome = async {
            // The pod already carries the disposal finalizer: any patch is a steer.
            let pod = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "ws-erin", "namespace": ns,
                             "labels": {"lifeguard.dev/workspace": "erin"},
                             "finalizers": ["lifeguard.dev/disposal"]},
                "spec": {"nodeName": "e2e-nowhere",
                         "containers": [{"name": "ide", "image": lifeguard_e2e::BUSYBOX_IMAGE}]}
            });
            let review = json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {
                    "uid": "e2e-steer-probe",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "resource": {"group": "", "version": "v1", "resource": "pods"},
                    "namespace": ns, "operation": "CREATE",
                    "userInfo": {"username": "e2e"}, "object": pod, "dryRun": true
                }
            });
            let every_replica = |steers: bool| {
                let review = &review;
                let client = &client;
                poll_until(
                    if steers {
                        "every replica steers"
                    } else {
                        "no replica steers"
                    },
                    Duration::from_secs(30),
                    move || async move {
                        let pods = ready_pods(client, Component::Webhook).await?;
                        for pod in &pods {
                            let response = review_at(pod, "/mutate", review)?;
                            if response["patch"].is_null() == steers {
                                return Ok(None);
                            }
                        }
                        Ok((!pods.is_empty()).then_some(()))
                    },
                )
            };
            every_replica(true).await?;
            windows
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"enforcement": "DryRun"}})),
                )
                .await?;
            every_replica(false).await?;
            // Through the API server: the pod is stored without an affinity.
            let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), &ns);
            let created = pods
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(pod.clone())?,
                )
                .await?;
            let affinity = created.spec.as_ref().and_then(|s| s.affinity.clone());
            pods.patch(
                "ws-erin",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await?;
            let _ = pods
                .delete("ws-erin", &DeleteParams::default().grace_period(0))
                .await;
            assert!(affinity.is_none(), "a DryRun window steered: {affinity:?}");
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}

/// The owner's side of a drain (issue 26 item 5): `ada` asks with `lifeguard workspaces
/// postpone` to be stopped 2 minutes after the occurrence's start, within the window's
/// `maxPostpone` of 3 minutes; `bob` asks nothing. bob is stopped at once, ada is counted
/// as postponed (the window is not Drained, a `DrainPostponed` Event names her) and is
/// stopped once her 2 minutes have run out. A request the webhook cannot read is refused.
#[tokio::test]
async fn an_owner_postpones_the_drain_of_a_workspace_within_the_windows_cap() {
    with_namespace("postpone", |client, ns| async move {
        apply_crds(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        for name in ["ada", "bob"] {
            workspaces
                .create(&PostParams::default(), &workspace(name).build()?)
                .await?;
        }
        for name in ["ada", "bob"] {
            wait_phase(&workspaces, name, WorkspacePhase::Running, TIMEOUT).await?;
        }
        // Bad requests fail before the drain: the CLI's own check, then the webhook's.
        let (code, _, stderr) =
            lifeguard(&["workspaces", "postpone", "ada", "-n", &ns, "--for", "soon"]).await?;
        assert_eq!(code, Some(2), "{stderr}");
        let bad = json!({"metadata": {"annotations": {POSTPONE_DRAIN_ANNOTATION: "all week"}}});
        let refused = workspaces
            .patch("ada", &PatchParams::default(), &Patch::Merge(&bad))
            .await
            .expect_err("the webhook refuses a postpone request it cannot read");
        assert!(
            refused.to_string().contains(POSTPONE_DRAIN_ANNOTATION),
            "{refused}"
        );
        let (code, out, stderr) =
            lifeguard(&["workspaces", "postpone", "ada", "-n", &ns, "--for", "2m"]).await?;
        assert_eq!(code, Some(0), "{out}{stderr}");

        // open_window starts the occurrence a minute ago: ada's stop is due a minute from now.
        let name = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(600),
            json!({"drain": true, "maxPostpone": "3m"}),
            json!({}),
        )
        .await?;
        let outcome = async {
            let windows: Api<MaintenanceWindow> = Api::all(client.clone());
            let window = windows.get(&name).await?;
            let start = window
                .spec
                .start
                .as_deref()
                .unwrap_or_default()
                .parse::<Timestamp>()?;
            let ada_due = start + SignedDuration::from_mins(2);
            wait_phase(&workspaces, "bob", WorkspacePhase::Stopped, TIMEOUT).await?;
            // bob's stop is over once the window no longer counts him: only ada remains.
            wait_status(&client, &name, "ada alone remaining, postponed", |s| {
                s["workspacesPostponed"] == 1 && s["workspacesRemaining"] == 1
            })
            .await?;
            assert!(
                Timestamp::now() < ada_due,
                "the check ran before ada was due"
            );
            let ada = workspaces.get("ada").await?;
            assert!(
                !ada.annotations().contains_key(DRAINED_BY_ANNOTATION),
                "ada was asked to stop before her postponement ran out"
            );
            let events = window_event_messages(&client, &name).await?;
            assert!(
                events
                    .iter()
                    .any(|(reason, note)| reason == "DrainPostponed"
                        && note.contains(&format!("{ns}/ada until"))),
                "{events:?}"
            );
            let (_, table, _) = lifeguard(&["maintenance", "status", &name]).await?;
            assert!(table.contains("postponed"), "{table}");

            wait_phase(&workspaces, "ada", WorkspacePhase::Stopped, TIMEOUT).await?;
            assert!(
                Timestamp::now() >= ada_due,
                "ada was stopped before {ada_due}, when her postponement ran out"
            );
            let status = wait_status(&client, &name, "Drained, nobody postponed", |s| {
                s["workspacesPostponed"].is_null() && s["workspacesRemaining"] == 0
            })
            .await?;
            assert_eq!(status["workspacesDrained"], 2, "{status}");
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}

/// The workspace user's side after a drain (issue 26 item 6): a window with `resumeAfter`
/// stops `cleo` while it is open and starts her again once its occurrence is over: a new
/// pod (start 2), `status.resumed` naming the window, a `WorkspacesResumed` Event.
#[tokio::test]
async fn a_resume_after_window_starts_what_it_drained_once_it_is_over() {
    with_namespace("resume", |client, ns| async move {
        apply_crds(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &workspace("cleo").build()?)
            .await?;
        wait_phase(&workspaces, "cleo", WorkspacePhase::Running, TIMEOUT).await?;
        // Open for another 25 s: long enough to drain cleo, short enough to wait out.
        let name = open_window(
            &client,
            &ns,
            SignedDuration::from_secs(25),
            json!({"drain": true, "resumeAfter": true}),
            json!({}),
        )
        .await?;
        let outcome = async {
            let stopped = wait_phase(&workspaces, "cleo", WorkspacePhase::Stopped, TIMEOUT).await?;
            assert_eq!(
                stopped.annotations().get(DRAINED_BY_ANNOTATION),
                Some(&name),
                "drained by the window"
            );
            let running = wait_phase(&workspaces, "cleo", WorkspacePhase::Running, TIMEOUT).await?;
            let status = running.status.clone().unwrap_or_default();
            assert_eq!(status.pod_starts, 2, "a new pod: {status:?}");
            assert!(
                status
                    .resumed
                    .as_deref()
                    .is_some_and(|r| r.starts_with(&format!("{name}/"))),
                "{status:?}"
            );
            assert!(
                !running.annotations().contains_key(DRAINED_BY_ANNOTATION),
                "the drained mark is gone"
            );
            let events = window_event_messages(&client, &name).await?;
            assert!(
                events
                    .iter()
                    .any(|(reason, note)| reason == "WorkspacesResumed"
                        && note.contains(&format!("{ns}/cleo"))),
                "{events:?}"
            );
            Ok(())
        }
        .await;
        close_window(&client, &name).await;
        outcome
    })
    .await;
}
