//! `maintenance pause|resume|preview`: the I/O around `crate::scope`.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::{Client, ResourceExt};
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, Workspace};
use serde_json::json;

use super::emit;
use super::maintenance::{get, read_source};
use crate::error::{Error, Result};
use crate::flags::Preview;
use crate::manifest::windows_in;
use crate::output::{Format, structured};
use crate::scope::{preview as covered_now, render_preview};
use crate::when::rfc3339;

/// Sets `spec.drainPaused`; a window that does not drain is refused by the webhook with
/// the reason.
pub async fn set_paused(client: Client, name: &str, paused: bool) -> Result<()> {
    let api: Api<MaintenanceWindow> = Api::all(client);
    get(&api, name).await?;
    let patch = json!({"spec": {"drainPaused": paused}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube(format!("updating maintenancewindow {name:?}"), e))?;
    let what = if paused {
        "paused: no new workspace is stopped; those being stopped finish"
    } else {
        "resumed"
    };
    emit(&format!("maintenancewindow/{name} drain {what}\n"))
}

type Labels = std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>;

async fn labels_of<K>(client: &Client) -> Result<Labels>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<PartialObjectMeta<K>> = Api::all(client.clone());
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| Error::kube(format!("listing {}", K::plural(&())), e))?;
    Ok(list
        .items
        .into_iter()
        .map(|o| (o.name_any(), o.metadata.labels.unwrap_or_default()))
        .collect())
}

/// Lists what a window (in the cluster, or in a file not created yet) covers now; reads
/// only.
pub async fn preview(client: Client, args: Preview, format: Format) -> Result<()> {
    let windows = match (&args.file, &args.name) {
        (Some(path), _) => {
            let (text, source) = read_source(path)?;
            windows_in(&text, &source)?
        }
        (None, Some(name)) => vec![get(&Api::all(client.clone()), name).await?],
        (None, None) => return Err(Error::Usage("give a window NAME or -f FILE".into())),
    };
    let namespaces = labels_of::<Namespace>(&client).await?;
    let nodes = labels_of::<Node>(&client).await?;
    let workspaces = Api::<Workspace>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::kube("listing workspaces", e))?
        .items;
    let now = Timestamp::now();
    let mut out = String::new();
    for window in &windows {
        let name = window.name_any();
        let compiled = CompiledWindow::compile(window)
            .map_err(|e| Error::Failed(format!("maintenancewindow {name:?} is invalid: {e}")))?;
        let mut p = covered_now(&compiled, &namespaces, &workspaces, &nodes);
        let occurrence = compiled
            .active_at(now)
            .or_else(|| compiled.next_after(now, 1).first().copied());
        p.occurrence = occurrence.map(|o| format!("{} - {}", rfc3339(o.start), rfc3339(o.end)));
        out.push_str(&match format {
            Format::Table => render_preview(&name, &p),
            _ => structured(&json!({"name": name, "covers": p}), format)?,
        });
    }
    emit(&out)
}
