//! lifeguard's admission webhook: denies workspace starts during maintenance windows,
//! rejects invalid lifeguard objects, and stamps the disposal finalizer on workspace pods.

pub mod body;
pub mod cache;
pub mod certgen;
pub mod certs;
pub mod conn;
pub mod decision;
pub mod eviction;
pub mod flags;
pub mod manager;
pub mod metrics;
pub mod object;
pub mod review;
pub mod rotation;
pub mod server;
pub mod steer;
#[cfg(test)]
mod tls_test_support;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::body::BodyBudget;
use crate::cache::Caches;
use crate::certs::{CertStore, FileSource};
use crate::conn::ConnLimits;
use crate::flags::Config;
use crate::metrics::Metrics;
use crate::server::AppState;

pub async fn run(config: Config) -> anyhow::Result<()> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let metrics = Metrics::new().context("registering metrics")?;
    // Managed mode: not ready until the CA of what is served is in every caBundle.
    let store = Arc::new(if config.manage_certificate {
        CertStore::untrusted(provider.clone())
    } else {
        CertStore::new(provider.clone())
    });
    let tls = certs::server_config(store.clone(), provider).context("building the TLS config")?;

    let client = kube::Client::try_default()
        .await
        .context("connecting to the Kubernetes API (KUBECONFIG or in-cluster)")?;
    if config.manage_certificate {
        // Not ready (and no TLS) until the first check has loaded a certificate.
        let settings = manager::Settings {
            secret: config.tls_secret.clone(),
            namespace: config.namespace.clone(),
            service: config.service_name.clone(),
            configurations: config.webhook_configurations.clone(),
            validity: jiff::SignedDuration::try_from(config.certificate_validity)
                .ok()
                .filter(|v| certgen::ca_validity(*v).is_ok())
                .context("--certificate-validity is too long (the CA, ten times as long, must end before the year 9999)")?,
            every: config.certificate_check_interval,
        };
        let manager =
            manager::Manager::new(client.clone(), settings, store.clone(), metrics.clone());
        tokio::spawn(manager.run());
    } else {
        let files = FileSource {
            cert_path: config.tls_cert.clone(),
            key_path: config.tls_key.clone(),
        };
        files
            .load_into(&store)
            .context("loading the serving certificate")?;
        store.record(&metrics);
        tokio::spawn(files.watch(store.clone(), config.cert_poll_interval, metrics.clone()));
    }
    let evictions = eviction::Evictions::new(client.clone(), config.eviction_max_wait);
    let state = AppState {
        evictions: Some(Arc::new(evictions)),
        caches: Caches::start(client, metrics.clone()),
        certs: store,
        metrics,
        recreation_users: Arc::new(config.recreation_users.clone()),
    };

    lifeguard_runtime::ops::spawn(config.metrics_listen, server::ops_router(state.clone())).await?;
    let admission = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(admission = %config.listen, ops = %config.metrics_listen, "serving");

    let metrics = state.metrics.clone();
    let app = server::admission_router(state, BodyBudget::from_config(&config));
    conn::serve_tls(
        admission,
        TlsAcceptor::from(Arc::new(tls)),
        app,
        ConnLimits::from_config(&config),
        metrics,
        serve_until_stopped(config.shutdown_delay),
        flags::STOP_GRACE,
    )
    .await;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves `delay` after SIGTERM/SIGINT: the replica keeps answering while the Service's
/// endpoints and kube-proxy drop it, then stops accepting and drains (`conn::serve_tls`).
async fn serve_until_stopped(delay: Duration) {
    lifeguard_runtime::process::shutdown_signal().await;
    tracing::info!(
        delay_seconds = delay.as_secs_f64(),
        "stopping: serving on until endpoints no longer route here"
    );
    tokio::time::sleep(delay).await;
}
