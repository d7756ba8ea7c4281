//! The `lifeguard` CLI as a user runs it: the real binary against the real cluster. Every
//! window covers only its test's namespace, so tests running alongside are not touched.

use std::process::Command;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    LOCAL_KUBECONFIG, NAMESPACE_LABEL, apply_crds, poll_until, unique_name, wait_for,
    with_namespace, workspace,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the CLI against the cluster the harness uses: `KUBECONFIG` when set (inherited),
/// else the local cluster's kubeconfig.
async fn lifeguard(args: &[&str]) -> anyhow::Result<Run> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lifeguard-cli"));
    if std::env::var_os("KUBECONFIG").is_none() && !args.contains(&"--kubeconfig") {
        command.args(["--kubeconfig", LOCAL_KUBECONFIG]);
    }
    command.args(args);
    let output = tokio::task::spawn_blocking(move || command.output()).await??;
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    eprintln!("$ lifeguard {}\n{run:#?}", args.join(" "));
    Ok(run)
}

/// `lifeguard maintenance next -f tests/fixtures/FIXTURE --at AT --count COUNT EXTRA...`
/// with no cluster behind it (a kubeconfig that does not exist).
async fn next_offline(fixture: &str, at: &str, count: &str, extra: &[&str]) -> Run {
    let path = format!("{}/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let mut args = vec![
        "--kubeconfig",
        "/nonexistent",
        "maintenance",
        "next",
        "-f",
        &path,
        "--at",
        at,
        "--count",
        count,
    ];
    args.extend_from_slice(extra);
    lifeguard(&args).await.expect("runs")
}

/// Tries to create workspace `name` until the webhook's answer is `denied` (its window
/// cache follows the API with a short delay); returns the denial message, if any.
async fn create_until(
    api: &Api<Workspace>,
    name: &str,
    denied: bool,
) -> anyhow::Result<Option<String>> {
    let what = format!("creating {name}: denied={denied}");
    poll_until(&what, Duration::from_secs(20), || async {
        let outcome = match api
            .create(&PostParams::default(), &workspace(name).build()?)
            .await
        {
            Ok(_) => None,
            Err(kube::Error::Api(s)) if s.code == 403 => Some(s.message),
            Err(e) => return Err(e.into()),
        };
        if outcome.is_some() == denied {
            return Ok(Some(outcome));
        }
        if outcome.is_none() {
            api.delete(name, &DeleteParams::default()).await?;
            lifeguard_e2e::wait_gone(api, name, TIMEOUT).await?;
        }
        Ok(None)
    })
    .await
}

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

#[tokio::test]
async fn start_deny_drain_wait_status_stop() {
    with_namespace("cli", |client, ns| async move {
        apply_crds(&client).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(&PostParams::default(), &workspace("alice").build()?)
            .await?;
        wait_for(&workspaces, "alice", TIMEOUT, "Running", |w| {
            phase(w) == Some(WorkspacePhase::Running)
        })
        .await?;

        let window = unique_name("e2e-cli");
        let selector = format!("{NAMESPACE_LABEL}={ns}");
        let start = [
            "maintenance",
            "start",
            &window,
            "--for",
            "10m",
            "--drain",
            "--message",
            "cli upgrade in progress",
            "--namespace-selector",
            &selector,
        ];
        let started = lifeguard(&start).await?;
        let outcome = async {
            anyhow::ensure!(started.code == Some(0), "start: {started:?}");
            anyhow::ensure!(
                started
                    .stdout
                    .contains(&format!("maintenancewindow/{window} started: until")),
                "{started:?}"
            );

            let again = lifeguard(&start).await?;
            anyhow::ensure!(
                again.code == Some(1) && again.stderr.contains("already exists"),
                "{again:?}"
            );

            let denial = create_until(&workspaces, "bob", true)
                .await?
                .unwrap_or_default();
            anyhow::ensure!(
                denial.contains("cli upgrade in progress") && denial.contains(&window),
                "denial: {denial}"
            );

            let wait = lifeguard(&[
                "maintenance",
                "wait",
                &window,
                "--drained",
                "--timeout",
                "90s",
            ])
            .await?;
            anyhow::ensure!(wait.code == Some(0), "wait: {wait:?}");
            anyhow::ensure!(
                wait.stdout
                    .contains(&format!("maintenancewindow/{window} drained")),
                "{wait:?}"
            );
            anyhow::ensure!(
                wait.stderr.contains("] drained"),
                "progress on stderr: {wait:?}"
            );
            let alice = workspaces.get("alice").await?;
            anyhow::ensure!(
                phase(&alice) == Some(WorkspacePhase::Stopped),
                "alice after the drain: {:?}",
                alice.status
            );

            let status = lifeguard(&["maintenance", "status", &window]).await?;
            let row = status
                .stdout
                .lines()
                .find(|l| l.starts_with(&window))
                .unwrap_or_default()
                .to_string();
            anyhow::ensure!(
                status.code == Some(0) && status.stdout.starts_with("NAME "),
                "{status:?}"
            );
            for part in [" yes ", "0 (drained)", "cli upgrade in progress"] {
                anyhow::ensure!(row.contains(part), "status row lacks {part:?}: {row}");
            }
            let listed = lifeguard(&["workspaces", "list", "-n", &ns]).await?;
            let alice_row = listed
                .stdout
                .lines()
                .find(|l| l.contains(" alice "))
                .unwrap_or_default()
                .to_string();
            anyhow::ensure!(
                alice_row.starts_with(&ns) && alice_row.contains("Stopped"),
                "{listed:?}"
            );

            let stopped = lifeguard(&["maintenance", "stop", &window]).await?;
            anyhow::ensure!(
                stopped.code == Some(0) && stopped.stdout.contains("ended at"),
                "{stopped:?}"
            );
            create_until(&workspaces, "bob", false).await?;

            let after = lifeguard(&["maintenance", "status", &window, "-o", "json"]).await?;
            let json: Value = serde_json::from_str(&after.stdout)?;
            anyhow::ensure!(json["items"][0]["active"] == json!(false), "{after:?}");
            let end = windows_end(&client, &window).await?;
            anyhow::ensure!(
                end <= Timestamp::now(),
                "the window's end moved to now, got {end}"
            );
            Ok(())
        }
        .await;
        let _ = Api::<MaintenanceWindow>::all(client.clone())
            .delete(&window, &DeleteParams::default())
            .await;
        outcome
    })
    .await;
}

async fn windows_end(client: &kube::Client, name: &str) -> anyhow::Result<Timestamp> {
    let window = Api::<MaintenanceWindow>::all(client.clone())
        .get(name)
        .await?;
    Ok(window.spec.end.unwrap_or_default().parse()?)
}

/// Ending maintenance now is the operator's emergency action: a 4-hour window with
/// `maxPostpone: 30m`, stopped 10 minutes in, cannot end now (a 10-minute occurrence is not
/// longer than its maxPostpone), so it is suspended, and starts are admitted again.
#[tokio::test]
async fn stop_ends_a_window_whose_end_now_would_be_invalid() {
    with_namespace("cli-stop-postpone", |client, ns| async move {
        apply_crds(&client).await?;
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let name = unique_name("e2e-cli-postpone");
        let now = Timestamp::now();
        let rfc3339 = |t: Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let window: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"start": rfc3339(now - SignedDuration::from_mins(10)),
                     "end": rfc3339(now + SignedDuration::from_mins(230)), "drain": true,
                     "maxPostpone": "30m",
                     "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns.clone()}}}
        }))?;
        windows.create(&PostParams::default(), &window).await?;
        let outcome = async {
            create_until(&workspaces, "denied", true).await?;
            let stopped = lifeguard(&["maintenance", "stop", &name]).await?;
            anyhow::ensure!(
                stopped.code == Some(0)
                    && stopped.stdout.contains("suspended")
                    && stopped.stdout.contains("maxPostpone"),
                "{stopped:?}"
            );
            create_until(&workspaces, "admitted", false).await?;
            Ok(())
        }
        .await;
        let _ = windows.delete(&name, &DeleteParams::default()).await;
        outcome
    })
    .await;
}

#[tokio::test]
async fn wait_times_out_with_exit_code_3_and_refuses_what_cannot_drain() {
    with_namespace("cli-wait", |client, ns| async move {
        apply_crds(&client).await?;
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let later = unique_name("e2e-cli-later");
        let now = Timestamp::now();
        let rfc3339 = |t: Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let window: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": later},
            "spec": {"start": rfc3339(now + SignedDuration::from_mins(30)),
                     "end": rfc3339(now + SignedDuration::from_mins(60)), "drain": true,
                     "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns.clone()}}}
        }))?;
        windows.create(&PostParams::default(), &window).await?;
        let outcome = async {
            let wait = lifeguard(&[
                "maintenance",
                "wait",
                &later,
                "--drained",
                "--timeout",
                "3s",
            ])
            .await?;
            anyhow::ensure!(wait.code == Some(3), "timeout exit code: {wait:?}");
            anyhow::ensure!(
                wait.stderr.contains("not open yet") && wait.stderr.contains("timed out after"),
                "{wait:?}"
            );

            let status = lifeguard(&["maintenance", "status", &later, "-o", "yaml"]).await?;
            anyhow::ensure!(
                status.code == Some(0) && status.stdout.contains("state: inactive"),
                "{status:?}"
            );

            let stopped = lifeguard(&["maintenance", "stop", &later]).await?;
            anyhow::ensure!(
                stopped.code == Some(0) && stopped.stdout.contains("had not started yet"),
                "{stopped:?}"
            );
            let suspended = lifeguard(&[
                "maintenance",
                "wait",
                &later,
                "--drained",
                "--timeout",
                "3s",
            ])
            .await?;
            anyhow::ensure!(
                suspended.code == Some(1) && suspended.stderr.contains("suspended"),
                "{suspended:?}"
            );

            let missing = lifeguard(&["maintenance", "status", "e2e-cli-no-such-window"]).await?;
            anyhow::ensure!(
                missing.code == Some(1) && missing.stderr.contains("not found"),
                "{missing:?}"
            );
            Ok(())
        }
        .await;
        let _ = windows.delete(&later, &DeleteParams::default()).await;
        outcome
    })
    .await;
}

#[tokio::test]
async fn next_from_a_file_needs_no_cluster() {
    let run = next_offline("weekly-window.yaml", "2026-10-11T12:00:00Z", "3", &[]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    // The end of summer time on 2026-10-25: the window still lasts two real hours.
    assert_eq!(
        run.stdout,
        "WINDOW           START                   END                     STARTS\n\
         sunday-upgrade   2026-10-18 02:30 CEST   2026-10-18 04:30 CEST   in 6d12h\n\
         sunday-upgrade   2026-10-25 02:30 CEST   2026-10-25 03:30 CET    in 13d\n\
         sunday-upgrade   2026-11-01 02:30 CET    2026-11-01 04:30 CET    in 20d\n"
    );
    let json = next_offline(
        "weekly-window.yaml",
        "2026-10-11T12:00:00Z",
        "3",
        &["-o", "json"],
    )
    .await;
    let value: Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(value["items"][1]["start"], "2026-10-25T00:30:00Z");
    assert_eq!(value["items"][1]["end"], "2026-10-25T02:30:00Z");
}

/// The defect of issue 24: a schedule starting on the first minute of a daylight-saving gap
/// lost that day's occurrence. Berlin's clock jumps from 02:00 CET to 03:00 CEST on
/// 2026-03-29, so `0 2 * * 0` opens at the jump, 03:00 CEST (01:00Z).
#[tokio::test]
async fn next_opens_a_window_on_the_jump_of_a_dst_gap_day() {
    let run = next_offline(
        "berlin-spring-forward.yaml",
        "2026-03-22T12:00:00Z",
        "2",
        &[],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout,
        "WINDOW          START                   END                     STARTS\n\
         berlin-sunday   2026-03-29 03:00 CEST   2026-03-29 04:00 CEST   in 6d13h\n\
         berlin-sunday   2026-04-05 02:00 CEST   2026-04-05 03:00 CEST   in 13d\n"
    );
    assert!(run.stderr.is_empty(), "{run:?}");
    // In force right after the jump.
    let during = next_offline(
        "berlin-spring-forward.yaml",
        "2026-03-29T01:30:00Z",
        "1",
        &[],
    )
    .await;
    assert!(
        during
            .stdout
            .contains("2026-03-29 03:00 CEST   2026-03-29 04:00 CEST   in force"),
        "{during:?}"
    );
}

#[tokio::test]
async fn next_names_the_schedule_extension_a_cronjob_would_refuse() {
    let run = next_offline(
        "month-end-window.yaml",
        "2028-02-15T00:00:00Z",
        "1",
        &["-o", "json"],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("uses lifeguard's extension L (last day of the month), which a Kubernetes CronJob would refuse"),
        "{run:?}"
    );
    let value: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(value["items"][0]["start"], "2028-02-29T22:00:00Z");
    assert_eq!(
        value["items"][0]["extensions"],
        serde_json::json!(["L (last day of the month)"])
    );
}

/// kubectl habits: with `kubectl-lifeguard` on PATH (installed beside `lifeguard`),
/// `kubectl lifeguard ...` runs the CLI as a kubectl plugin, and its help says so.
#[tokio::test]
async fn kubectl_runs_the_cli_as_a_plugin() {
    let dir = std::env::temp_dir().join(format!("lifeguard-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let plugin = dir.join("kubectl-lifeguard");
    let _ = std::fs::remove_file(&plugin);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-lifeguard"), &plugin).expect("symlink");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/weekly-window.yaml");
    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .arg("lifeguard")
            .args(args)
            .env("PATH", &path)
            .output()
            .expect("kubectl runs")
    };
    let next = kubectl(&[
        "--kubeconfig",
        "/nonexistent",
        "maintenance",
        "next",
        "-f",
        fixture,
        "--at",
        "2026-10-11T12:00:00Z",
        "--count",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&next.stdout);
    assert!(next.status.success(), "{next:?}");
    assert!(
        stdout.contains("sunday-upgrade   2026-10-18 02:30 CEST"),
        "{stdout}"
    );
    let help = kubectl(&["--help"]);
    let help_text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{help:?}");
    assert!(
        help_text.contains("Usage: kubectl lifeguard"),
        "{help_text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
