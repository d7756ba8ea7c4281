//! In-memory caches the decisions read: MaintenanceWindows (compiled once per change) and
//! namespace labels. Admission requests call the API server only for a namespace the cache
//! has not seen yet (just created), within `NAMESPACE_LOOKUP_TIMEOUT`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::window::CompiledWindow;

use crate::decision::NamespaceLabels;
use crate::metrics::Metrics;

/// How long a request waits for a namespace the cache misses. Well inside the webhook
/// configuration's `timeoutSeconds: 5`, so the API server gets our answer, not a timeout.
pub const NAMESPACE_LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

pub struct Caches {
    windows: RwLock<Arc<Vec<CompiledWindow>>>,
    namespaces: Store<PartialObjectMeta<Namespace>>,
    /// For namespace lookups on a cache miss; `None` in caches filled by hand.
    client: Option<Client>,
    ready: AtomicBool,
}

impl Caches {
    /// Starts the watches in the background; `is_ready` turns true once both have listed.
    pub fn start(client: Client, metrics: Metrics) -> Arc<Self> {
        let (window_reader, window_writer) = reflector::store::<MaintenanceWindow>();
        let (namespace_reader, namespace_writer) = reflector::store();
        let caches = Arc::new(Self {
            windows: RwLock::new(Arc::new(Vec::new())),
            namespaces: namespace_reader.clone(),
            client: Some(client.clone()),
            ready: AtomicBool::new(false),
        });

        let namespaces = watcher(
            Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .reflect(namespace_writer)
        .for_each(|event| async move {
            if let Err(error) = event {
                tracing::warn!(%error, "namespace watch interrupted; retrying");
            }
        });
        tokio::spawn(namespaces);

        let compiler = caches.clone();
        let compile_metrics = metrics.clone();
        let reader = window_reader.clone();
        let windows = watcher(
            Api::<MaintenanceWindow>::all(client),
            watcher::Config::default(),
        )
        .default_backoff()
        .reflect(window_writer)
        .map_err(|error| tracing::warn!(%error, "MaintenanceWindow watch interrupted; retrying"))
        .for_each(move |event| {
            if let Ok(
                watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone,
            ) = event
            {
                compiler.recompile(&reader.state(), &compile_metrics);
            }
            futures::future::ready(())
        });
        tokio::spawn(windows);

        let readiness = caches.clone();
        tokio::spawn(async move {
            let windows_ready = window_reader.wait_until_ready().await;
            let namespaces_ready = namespace_reader.wait_until_ready().await;
            if windows_ready.is_ok() && namespaces_ready.is_ok() {
                readiness.ready.store(true, Ordering::Release);
                metrics.cache_synced.set(1);
                tracing::info!("MaintenanceWindow and Namespace caches synced");
            }
        });
        caches
    }

    /// Caches filled by hand, for tests and benchmarks.
    pub fn fixed(windows: Vec<CompiledWindow>) -> Arc<Self> {
        let (namespaces, _) = reflector::store();
        Arc::new(Self {
            windows: RwLock::new(Arc::new(windows)),
            namespaces,
            client: None,
            ready: AtomicBool::new(true),
        })
    }

    fn recompile(&self, windows: &[Arc<MaintenanceWindow>], metrics: &Metrics) {
        let mut compiled = Vec::with_capacity(windows.len());
        let mut invalid = 0;
        for window in windows {
            match CompiledWindow::compile(window) {
                Ok(w) => compiled.push(w),
                Err(errors) => {
                    invalid += 1;
                    // Stored before the webhook validated it (or by an older version).
                    tracing::warn!(window = %window.name_any(), %errors, "MaintenanceWindow is invalid and not enforced");
                }
            }
        }
        metrics.windows_cached.set(compiled.len() as i64);
        metrics.windows_invalid.set(invalid);
        metrics.forget_windows_except(&windows.iter().map(|w| w.name_any()).collect());
        let mut current = self.windows.write().unwrap_or_else(|p| p.into_inner());
        *current = Arc::new(compiled);
    }

    pub fn windows(&self) -> Arc<Vec<CompiledWindow>> {
        self.windows
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn namespace(&self, name: &str) -> Option<Arc<PartialObjectMeta<Namespace>>> {
        self.namespaces.get(&ObjectRef::new(name))
    }

    /// The labels of `namespace` for a decision: from the cache, else from the API within
    /// `NAMESPACE_LOOKUP_TIMEOUT`, else unknown with the reason. Cluster-scoped requests
    /// (`None`) have no namespace labels.
    pub async fn namespace_labels(&self, namespace: Option<&str>) -> NamespaceLabels {
        let Some(name) = namespace else {
            return NamespaceLabels::Known(Default::default());
        };
        if let Some(cached) = self.namespace(name) {
            return NamespaceLabels::Known(cached.metadata.labels.clone().unwrap_or_default());
        }
        let unknown = |reason: String| NamespaceLabels::Unknown {
            namespace: name.to_string(),
            reason,
        };
        let Some(client) = &self.client else {
            return unknown("the namespace is not in the cache".into());
        };
        let api = Api::<Namespace>::all(client.clone());
        match tokio::time::timeout(NAMESPACE_LOOKUP_TIMEOUT, api.get_metadata_opt(name)).await {
            Ok(Ok(Some(found))) => {
                NamespaceLabels::Known(found.metadata.labels.unwrap_or_default())
            }
            Ok(Ok(None)) => unknown("the namespace does not exist".into()),
            Ok(Err(error)) => {
                tracing::warn!(namespace = name, %error, "namespace lookup failed");
                unknown(format!("looking it up failed: {error}"))
            }
            Err(_) => {
                tracing::warn!(namespace = name, "namespace lookup timed out");
                unknown(format!(
                    "no answer from the API server within {}s",
                    NAMESPACE_LOOKUP_TIMEOUT.as_secs()
                ))
            }
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}
