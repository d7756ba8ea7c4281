use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};

/// The label carrying a namespace's own name, which the API server sets on every namespace:
/// a test's MaintenanceWindow selects its own namespace by it, as users name one.
pub const NAMESPACE_LABEL: &str = "kubernetes.io/metadata.name";

/// The label (`=true`) on every namespace an e2e test creates.
pub const E2E_NAMESPACE_LABEL: &str = "lifeguard.dev/e2e";

/// A DNS-label-safe name unique to this test run: `<prefix>-<time><counter>`.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{:x}{n}", nanos ^ std::process::id())
}

/// Creates namespace `name` with `labels` and waits until pods can be created in it: the
/// service account controller has created its default ServiceAccount (until then the API
/// server refuses pods that run as it).
pub async fn create_usable_namespace(
    client: &Client,
    name: &str,
    labels: &[(&str, &str)],
) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.to_owned());
    for (key, value) in labels {
        ns.labels_mut().insert((*key).into(), (*value).into());
    }
    namespaces.create(&PostParams::default(), &ns).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), name);
    crate::wait_for(
        &accounts,
        "default",
        Duration::from_secs(60),
        "created",
        |_| true,
    )
    .await?;
    Ok(())
}

/// Runs `test` with a client and a fresh namespace, and deletes the namespace afterwards,
/// also when the test fails; the test's panic is then passed on.
pub async fn with_namespace<F, Fut>(prefix: &str, test: F)
where
    F: FnOnce(Client, String) -> Fut,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let client = match crate::client().await {
        Ok(client) => client,
        Err(e) => panic!("{e:#}"),
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let name = unique_name(&format!("e2e-{prefix}"));
    // The API server adds NAMESPACE_LABEL, by which a test's MaintenanceWindow covers its
    // own namespace and no other test's.
    let labels = [(E2E_NAMESPACE_LABEL, "true")];
    if let Err(e) = create_usable_namespace(&client, &name, &labels).await {
        let _ = namespaces.delete(&name, &DeleteParams::background()).await;
        panic!("namespace {name} is unusable: {e:#}");
    }
    let outcome = tokio::spawn(test(client.clone(), name.clone())).await;
    if let Err(e) = namespaces.delete(&name, &DeleteParams::background()).await {
        eprintln!("warning: deleting namespace {name}: {e}");
    }
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("test in namespace {name} failed: {e:#}"),
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Err(join) => panic!("test in namespace {name} was cancelled: {join}"),
    }
}
