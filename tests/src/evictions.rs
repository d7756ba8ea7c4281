//! Evictions as a drain tool posts them, one answer at a time.

use kube::Client;
use kube::api::{Api, DeleteParams, EvictParams, PostParams};

use k8s_openapi::api::core::v1::Pod;

/// The API's answer to one eviction of pod `name` in `ns`: (code, message). A client
/// without kube's default retries, which would retry a 429 until the pod is gone, as a
/// drain tool does; here each answer is the point. `dry_run` as `kubectl drain
/// --dry-run=server` asks it, and as the API server passes it to admission.
pub async fn evict_once(ns: &str, name: &str, dry_run: bool) -> anyhow::Result<(u16, String)> {
    let mut config = crate::cluster_config().await?;
    config.default_retry = false;
    let pods: Api<Pod> = Api::namespaced(Client::try_from(config)?, ns);
    let params = EvictParams {
        delete_options: dry_run.then(|| DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        }),
        post_options: PostParams {
            dry_run,
            ..PostParams::default()
        },
    };
    match pods.evict(name, &params).await {
        Ok(_) => Ok((201, String::new())),
        Err(kube::Error::Api(s)) => Ok((s.code, s.message)),
        Err(e) => Err(e.into()),
    }
}
