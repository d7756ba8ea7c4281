//! The plain-HTTP ops endpoints every deployable serves on its metrics port: `/healthz`
//! for the kubelet's liveness probe, `/readyz` for its readiness probe and `/metrics` for
//! Prometheus. Each deployable says what ready means and may add routes of its own.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::routing::{MethodRouter, get};
use prometheus::{Encoder, Registry, TEXT_FORMAT, TextEncoder};

/// `Ok` when ready; otherwise why not, which `/readyz` answers with a 503.
pub type Readiness = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The registry in Prometheus' text format; an encoding failure is reported in the body
/// as a comment, so a scrape still shows why the numbers are missing.
pub fn render(registry: &Registry) -> String {
    let mut buffer = Vec::new();
    if let Err(e) = TextEncoder::new().encode(&registry.gather(), &mut buffer) {
        return format!("# error encoding metrics: {e}\n");
    }
    String::from_utf8_lossy(&buffer).into_owned()
}

/// A `/healthz` that says only that the process answers.
pub fn always_live<S: Clone + Send + Sync + 'static>() -> MethodRouter<S> {
    get(|| async { "ok" })
}

/// `/healthz` (from `liveness`), `/readyz` (from `readiness`) and `/metrics` (`registry`).
pub fn router(liveness: MethodRouter, readiness: Readiness, registry: Registry) -> Router {
    Router::new()
        .route("/healthz", liveness)
        .route(
            "/readyz",
            get(move || {
                let answer = readiness();
                async move {
                    match answer {
                        Ok(()) => (StatusCode::OK, "ready".to_string()),
                        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let body = render(&registry);
                async move { ([(CONTENT_TYPE, TEXT_FORMAT)], body) }
            }),
        )
}

/// Binds `address` (failing start-up if it cannot) and serves `app` in the background.
pub async fn spawn(address: SocketAddr, app: Router) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding {address}"))?;
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "health and metrics server stopped");
        }
    });
    Ok(())
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod ops_tests;
