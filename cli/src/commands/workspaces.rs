use jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ListParams};
use lifeguard_api::Workspace;

use super::{emit, read_error};
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
