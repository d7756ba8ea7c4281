use jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams};
use lifeguard_api::Workspace;
use lifeguard_api::names::POSTPONE_DRAIN_ANNOTATION;
use serde_json::json;

use super::{emit, read_error};
use crate::error::Error;
use crate::output::{Format, render};
use crate::workspaces::rows;

/// `namespace` `None` lists every namespace.
pub async fn list(
    client: Client,
    namespace: Option<&str>,
    format: Format,
) -> crate::error::Result<()> {
    let api: Api<Workspace> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let where_ = namespace.map_or("any namespace".to_string(), |ns| format!("namespace {ns}"));
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| read_error("Workspace", format!("listing workspaces in {where_}"), e))?;
    if list.items.is_empty() && format == Format::Table {
        eprintln!("No workspaces found in {where_}.");
        return Ok(());
    }
    emit(&render(&rows(&list.items, Timestamp::now()), format)?)
}

/// Sets (or with `--cancel` removes) the workspace's postpone request. The webhook checks it
/// again; whether a window grants it is the window's `maxPostpone`.
pub async fn postpone(
    client: Client,
    namespace: &str,
    args: &crate::flags::Postpone,
) -> crate::error::Result<()> {
    let api: Api<Workspace> = Api::namespaced(client, namespace);
    let value = if args.cancel {
        serde_json::Value::Null
    } else {
        json!(args.for_)
    };
    let patch = json!({"metadata": {"annotations": {POSTPONE_DRAIN_ANNOTATION: value}}});
    let name = args.name.as_str();
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube(format!("updating workspace {namespace}/{name}"), e))?;
    emit(&match &args.for_ {
        Some(d) if !args.cancel => format!(
            "workspace/{name} asks to be drained {d} after a window's start (granted up to the window's maxPostpone)\n"
        ),
        _ => format!("workspace/{name} no longer asks to postpone its drain\n"),
    })
}
