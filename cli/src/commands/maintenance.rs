use jiff::Timestamp;
use jiff::tz::TimeZone;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::window::CompiledWindow;

use super::{emit, read_error};
use crate::error::{Error, Result, status_code};
use crate::flags::{Next, Start};
use crate::manifest::{OneOff, one_off_window, parse_selector, windows_in};
use crate::output::{Format, render, structured};
use crate::stop::StopAction;
use crate::when::{parse_time, rfc3339, whole_seconds};
use crate::windows::{occurrences, window_row};

fn not_found(name: &str) -> Error {
    Error::Failed(format!(
        "maintenancewindow {name:?} not found (`lifeguard maintenance status` lists them)"
    ))
}

pub(super) async fn get(api: &Api<MaintenanceWindow>, name: &str) -> Result<MaintenanceWindow> {
    match api.get_opt(name).await {
        Ok(Some(w)) => Ok(w),
        Ok(None) => Err(not_found(name)),
        Err(e) => Err(read_error(
            "MaintenanceWindow",
            format!("reading maintenancewindow {name:?}"),
            e,
        )),
    }
}

/// The window `maintenance start` creates, from the flags and the clock.
pub fn window_to_start(args: Start) -> Result<MaintenanceWindow> {
    window_starting(args, Timestamp::now(), &TimeZone::system())
}

fn window_starting(args: Start, now: Timestamp, zone: &TimeZone) -> Result<MaintenanceWindow> {
    let start = match &args.at {
        None => whole_seconds(now),
        Some(text) => {
            let at = parse_time(text, now, zone).map_err(|e| Error::Usage(format!("--at: {e}")))?;
            if at < whole_seconds(now) {
                return Err(Error::Usage(format!(
                    "--at: {} is in the past",
                    rfc3339(at)
                )));
            }
            at
        }
    };
    let end = match (args.duration, &args.until) {
        (Some(d), _) => start
            .checked_add(d)
            .map_err(|e| Error::Usage(format!("--for: {e}")))?,
        (None, Some(text)) => {
            let end =
                parse_time(text, now, zone).map_err(|e| Error::Usage(format!("--until: {e}")))?;
            if end <= now {
                return Err(Error::Usage(format!(
                    "--until: {} is not in the future",
                    rfc3339(end)
                )));
            }
            end
        }
        (None, None) => return Err(Error::Usage("give --for or --until".into())),
    };
    let selector = |flag: &str, text: &Option<String>| {
        text.as_deref().map(|t| parse_selector(flag, t)).transpose()
    };
    one_off_window(OneOff {
        name: args.name,
        start,
        end,
        message: args.message,
        drain: args.drain,
        notice: args.notice,
        allow_recreation: args.allow_recreation,
        namespace_selector: selector("--namespace-selector", &args.namespace_selector)?,
        workspace_selector: selector("--workspace-selector", &args.workspace_selector)?,
        node_selector: selector("--node-selector", &args.node_selector)?,
        max_concurrent_drains: args
            .max_concurrent
            .as_deref()
            .map(crate::scope::budget_flag),
    })
}

pub async fn start(client: Client, window: MaintenanceWindow, format: Format) -> Result<()> {
    let name = window.name_any();
    let api: Api<MaintenanceWindow> = Api::all(client);
    let created = match api.create(&PostParams::default(), &window).await {
        Ok(created) => created,
        Err(e) if status_code(&e) == Some(409) => {
            return Err(Error::Failed(format!(
                "maintenancewindow {name:?} already exists; `lifeguard maintenance stop {name}` ends it, or pick another name"
            )));
        }
        Err(e) => {
            return Err(read_error(
                "MaintenanceWindow",
                format!("creating maintenancewindow {name:?}"),
                e,
            ));
        }
    };
    if created.spec.namespace_selector.is_none() && created.spec.workspace_selector.is_none() {
        eprintln!("note: {name} has no selector: it covers every namespace");
    }
    match format {
        Format::Table => emit(&started_line(&created, Timestamp::now())),
        _ => emit(&structured(&created, format)?),
    }
}

/// What `start` says it did: a window from now is started, a later one scheduled.
fn started_line(window: &MaintenanceWindow, now: Timestamp) -> String {
    let spec = &window.spec;
    let start = spec.start.as_deref().unwrap_or("?");
    let end = spec.end.as_deref().unwrap_or("?");
    let later = start.parse::<Timestamp>().is_ok_and(|t| t > now);
    let mut line = if later {
        format!(
            "maintenancewindow/{} scheduled: from {start} until {end}",
            window.name_any()
        )
    } else {
        format!(
            "maintenancewindow/{} started: until {end}",
            window.name_any()
        )
    };
    if spec.node_selector.is_some() {
        line.push_str(", on the selected nodes only");
    }
    if spec.drain {
        line.push_str(", draining");
    }
    if let Some(budget) = &spec.max_concurrent_drains {
        let budget = match budget {
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => n.to_string(),
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => s.clone(),
        };
        line.push_str(&format!(" at most {budget} at once"));
    }
    if let Some(notice) = &spec.notice {
        line.push_str(&format!("; covered workspaces are told {notice} before"));
    }
    line.push('\n');
    line
}

pub async fn stop(client: Client, name: &str, format: Format) -> Result<()> {
    let api: Api<MaintenanceWindow> = Api::all(client);
    let window = get(&api, name).await?;
    let (updated, what) = match crate::stop::stop_action(&window, Timestamp::now())? {
        StopAction::Nothing(why) => (window, why),
        StopAction::Patch(patch, what) => {
            let updated = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| Error::kube(format!("updating maintenancewindow {name:?}"), e))?;
            (updated, what)
        }
    };
    match format {
        Format::Table => emit(&format!("maintenancewindow/{name} {what}\n")),
        _ => emit(&structured(&updated, format)?),
    }
}

/// Adds the exclusion `crate::skip::plan` finds to the window, guarded by the
/// resourceVersion it was read at (a concurrent edit fails instead of being overwritten).
pub async fn skip(
    client: Client,
    args: &crate::flags::Skip,
    target: &crate::skip::Target,
    format: Format,
) -> Result<()> {
    let api: Api<MaintenanceWindow> = Api::all(client);
    let name = args.name.as_str();
    let window = get(&api, name).await?;
    let now = Timestamp::now();
    let plan =
        crate::skip::plan(&window, target, args.reason.as_deref(), now).map_err(Error::Failed)?;
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": window.resource_version()},
        "spec": {"exclusions": plan.exclusions},
    });
    let updated = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube(format!("updating maintenancewindow {name:?}"), e))?;
    match format {
        Format::Table => {
            let next = CompiledWindow::compile(&updated)
                .ok()
                .and_then(|w| w.next_after(now, 1).first().map(|o| rfc3339(o.start)))
                .unwrap_or_else(|| "none".into());
            emit(&format!(
                "maintenancewindow/{name} skips the occurrence from {} to {} ({}); next occurrence: {next}\n",
                rfc3339(plan.occurrence.start),
                rfc3339(plan.occurrence.end),
                plan.exclusion.reason.as_deref().unwrap_or_default(),
            ))
        }
        _ => emit(&structured(&updated, format)?),
    }
}

pub async fn status(client: Client, name: Option<&str>, format: Format) -> Result<()> {
    let api: Api<MaintenanceWindow> = Api::all(client);
    let windows = match name {
        Some(name) => vec![get(&api, name).await?],
        None => {
            api.list(&ListParams::default())
                .await
                .map_err(|e| {
                    read_error("MaintenanceWindow", "listing maintenance windows".into(), e)
                })?
                .items
        }
    };
    if windows.is_empty() && format == Format::Table {
        eprintln!("No maintenance windows found.");
        return Ok(());
    }
    let now = Timestamp::now();
    let mut rows: Vec<_> = windows.iter().map(|w| window_row(w, now)).collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    emit(&render(&rows, format)?)?;
    // One window: the occurrences its exclusions skip before the next start, and why.
    if let (Some(_), [row], Format::Table) = (name, rows.as_slice(), format) {
        if let Some(hold) = &row.hold {
            emit(&hold.line(now))?;
        }
        for skipped in &row.skipped {
            emit(&format!(
                "skipped: {} - {}{}\n",
                skipped.start,
                skipped.end,
                skipped
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ))?;
        }
    }
    // One window: its selected nodes, each with what is left on it.
    if let (Some(_), [window], Format::Table) = (name, windows.as_slice(), format)
        && let Some(status) = &window.status
        && !status.nodes.is_empty()
    {
        emit(&format!("\n{}", crate::scope::node_table(&status.nodes)))?;
    }
    Ok(())
}

pub(super) fn read_source(path: &std::path::Path) -> Result<(String, String)> {
    let source = path.display().to_string();
    let text = if source == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    }
    .map_err(|e| Error::Io {
        context: format!("reading {source}"),
        source: e,
    })?;
    Ok((text, source))
}

/// `client` is `None` for `-f`, which must work without a cluster.
pub async fn next(client: Option<Client>, args: Next, format: Format) -> Result<()> {
    let now = Timestamp::now();
    let at = match &args.at {
        Some(text) => parse_time(text, now, &TimeZone::system())
            .map_err(|e| Error::Usage(format!("--at: {e}")))?,
        None => now,
    };
    let windows = match (&args.file, client, &args.name) {
        (Some(path), _, _) => {
            let (text, source) = read_source(path)?;
            windows_in(&text, &source)?
        }
        (None, Some(client), Some(name)) => vec![get(&Api::all(client), name).await?],
        _ => return Err(Error::Usage("give a window NAME or -f FILE".into())),
    };
    let mut rows = Vec::new();
    for window in &windows {
        let name = window.name_any();
        let found = occurrences(window, at, usize::from(args.count))
            .map_err(|e| Error::Failed(format!("maintenancewindow {name:?} is invalid: {e}")))?;
        if window.spec.suspend {
            eprintln!(
                "note: {name} is suspended; these occurrences take effect only once it is resumed"
            );
        }
        if found.is_empty() {
            eprintln!("note: {name} has no occurrence at or after {}", rfc3339(at));
        }
        if let Some(row) = found.first().filter(|row| !row.extensions.is_empty()) {
            eprintln!(
                "note: {name}'s schedule uses lifeguard's extension {}, which a Kubernetes CronJob would refuse",
                row.extensions.join(", ")
            );
        }
        rows.extend(found);
    }
    if rows.is_empty() && format == Format::Table {
        return Ok(());
    }
    emit(&render(&rows, format)?)
}

#[cfg(test)]
#[path = "maintenance_tests.rs"]
mod maintenance_tests;
