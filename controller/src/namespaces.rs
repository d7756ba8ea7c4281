//! Namespace labels, for windows' `namespaceSelector`s: a fresh list for a window's pass
//! (`list_labels`), and the workspace reconciler's cache of them:
//! a notice is computed from them on every reconcile, and a window's change reaches only
//! the namespaces its selectors cover (`notice_reach`). Only the name and the labels are
//! kept (a few hundred bytes a namespace).
//!
//! A namespace whose labels change may come under a window's notice or leave it, so its
//! workspaces look again then. So do those of a namespace created after the first list:
//! a window's change that came before the namespace reached this cache could not name it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};

/// Every Namespace's labels, listed now (metadata only): what a window's pass reads, where
/// the cache above may still be filling.
pub async fn list_labels(
    client: &Client,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, kube::Error> {
    let api: Api<PartialObjectMeta<Namespace>> = Api::all(client.clone());
    Ok(api
        .list_metadata(&kube::api::ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|ns| (ns.name_any(), ns.metadata.labels.unwrap_or_default()))
        .collect())
}

#[derive(Clone)]
pub struct NamespaceCache {
    store: Store<PartialObjectMeta<Namespace>>,
    /// Whether the first list is in: before, a namespace missing from the cache may exist.
    ready: Arc<AtomicBool>,
}

impl NamespaceCache {
    /// The labels of `namespace`; `None` when the cache cannot say (not filled yet, or the
    /// namespace not seen), so the caller reads it from the API instead.
    pub fn labels(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        if !self.is_ready() {
            return None;
        }
        let ns = self.store.get(&ObjectRef::new(namespace))?;
        Some(ns.metadata.labels.clone().unwrap_or_default())
    }

    /// Every namespace with its labels, once the first list is in.
    pub fn all(&self) -> Option<BTreeMap<String, BTreeMap<String, String>>> {
        if !self.is_ready() {
            return None;
        }
        Some(
            self.store
                .state()
                .iter()
                .map(|ns| {
                    (
                        ns.name_any(),
                        ns.metadata.labels.clone().unwrap_or_default(),
                    )
                })
                .collect(),
        )
    }

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

fn strip(ns: &mut PartialObjectMeta<Namespace>) {
    let meta = std::mem::take(&mut ns.metadata);
    ns.types = None;
    ns.metadata.name = meta.name;
    ns.metadata.labels = meta.labels;
}

/// Whether the workspaces of namespace `name`, now with `labels`, should look again: its
/// labels changed, or it is new since the first list.
fn labels_changed(
    seen: &mut HashMap<String, BTreeMap<String, String>>,
    name: &str,
    labels: BTreeMap<String, String>,
) -> bool {
    seen.insert(name.to_string(), labels.clone())
        .is_none_or(|before| before != labels)
}

/// Starts watching Namespaces (metadata only). Returns the cache and the stream of
/// namespaces whose labels changed, each as a one-element set.
pub fn watch(client: Client) -> (NamespaceCache, mpsc::UnboundedReceiver<BTreeSet<String>>) {
    let (store, writer) = reflector::store();
    let ready = Arc::new(AtomicBool::new(false));
    let (changed, changes) = mpsc::unbounded();
    let events = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(client),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(strip)
    .reflect(writer);
    let is_ready = ready.clone();
    tokio::spawn(async move {
        let mut seen = HashMap::new();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let name = match event {
                Ok(watcher::Event::InitApply(ns)) => {
                    let name = ns.name_any();
                    seen.insert(name, ns.metadata.labels.unwrap_or_default());
                    None
                }
                Ok(watcher::Event::InitDone) => {
                    is_ready.store(true, Ordering::Release);
                    None
                }
                Ok(watcher::Event::Apply(ns)) => {
                    let name = ns.name_any();
                    let labels = ns.metadata.labels.unwrap_or_default();
                    labels_changed(&mut seen, &name, labels).then_some(name)
                }
                // A deleted namespace's workspaces are being deleted with it.
                Ok(watcher::Event::Delete(ns)) => {
                    seen.remove(&ns.name_any());
                    None
                }
                Ok(watcher::Event::Init) => {
                    seen.clear();
                    None
                }
                Err(error) => {
                    tracing::warn!(%error, "watching namespaces failed; retrying");
                    None
                }
            };
            if let Some(name) = name
                && changed.unbounded_send(BTreeSet::from([name])).is_err()
            {
                return; // the controller stopped
            }
        }
    });
    (NamespaceCache { store, ready }, changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_namespace_or_a_label_change_counts() {
        let mut seen = HashMap::new();
        let team = |t: &str| BTreeMap::from([("team".to_string(), t.to_string())]);
        let cases = [
            ("created after the first list", "ns-a", team("a"), true),
            (
                "same labels again (another field changed)",
                "ns-a",
                team("a"),
                false,
            ),
            ("label value changed", "ns-a", team("b"), true),
            ("labels removed", "ns-a", BTreeMap::new(), true),
            ("another new namespace", "ns-b", team("a"), true),
        ];
        for (what, name, labels, want) in cases {
            assert_eq!(labels_changed(&mut seen, name, labels), want, "{what}");
        }
    }
}
