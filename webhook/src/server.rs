//! HTTP surfaces: admission over TLS, and health plus metrics over plain HTTP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use jiff::Timestamp;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::cache::Caches;
use crate::certs::CertStore;
use crate::decision::{self, Context};
use crate::metrics::Metrics;
use crate::review::{self, AdmissionRequest, Outcome};

#[derive(Clone)]
pub struct AppState {
    pub caches: Arc<Caches>,
    /// Serving certificate; not ready until one is loaded.
    pub certs: Arc<CertStore>,
    pub metrics: Metrics,
    pub recreation_users: Arc<Vec<String>>,
}

#[derive(Clone, Copy)]
enum Webhook {
    Validate,
    Mutate,
}

impl Webhook {
    fn label(self) -> &'static str {
        match self {
            Self::Validate => "validate",
            Self::Mutate => "mutate",
        }
    }
}

pub fn admission_router(state: AppState, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/validate", post(validate))
        .route("/mutate", post(mutate))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
}

pub fn ops_router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn validate(State(state): State<AppState>, body: Bytes) -> Response {
    admit(&state, Webhook::Validate, &body)
}

async fn mutate(State(state): State<AppState>, body: Bytes) -> Response {
    admit(&state, Webhook::Mutate, &body)
}

fn admit(state: &AppState, webhook: Webhook, body: &[u8]) -> Response {
    let started = Instant::now();
    let request = match review::parse(body) {
        Ok(request) => request,
        Err(error) => {
            state
                .metrics
                .bad_requests
                .with_label_values(&[webhook.label()])
                .inc();
            tracing::warn!(webhook = webhook.label(), %error, "bad admission request");
            let body = json!({ "error": error.to_string() }).to_string();
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response();
        }
    };
    let outcome = decide(state, webhook, &request);
    let body = review::response(&request.uid, &outcome).to_string();
    state
        .metrics
        .admissions
        .with_label_values(&[
            webhook.label(),
            request.operation.as_str(),
            &request.kind,
            outcome.decision(),
        ])
        .inc();
    state
        .metrics
        .latency
        .with_label_values(&[webhook.label()])
        .observe(started.elapsed().as_secs_f64());
    if let Outcome::Deny { message, .. } = &outcome {
        tracing::info!(
            uid = %request.uid, kind = %request.kind, namespace = ?request.namespace,
            name = ?request.name, user = %request.username, %message, "denied"
        );
    }
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn decide(state: &AppState, webhook: Webhook, request: &AdmissionRequest) -> Outcome {
    match webhook {
        Webhook::Mutate => decision::mutate(request),
        Webhook::Validate => {
            let windows = state.caches.windows();
            let namespace = request
                .namespace
                .as_deref()
                .and_then(|ns| state.caches.namespace(ns));
            let context = Context {
                windows: &windows,
                namespace_labels: namespace.as_ref().and_then(|n| n.metadata.labels.as_ref()),
                now: Timestamp::now(),
                recreation_users: &state.recreation_users,
            };
            decision::validate(request, &context)
        }
    }
}

async fn readyz(State(state): State<AppState>) -> Response {
    match readiness(state.caches.is_ready(), state.certs.readiness()) {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}

/// Ready only with synced caches (decisions need them) and a certificate the API server
/// trusts (it cannot connect otherwise).
fn readiness(
    caches_synced: bool,
    certificate: Result<(), &'static str>,
) -> Result<(), &'static str> {
    if !caches_synced {
        return Err("MaintenanceWindow and Namespace caches not synced yet");
    }
    certificate
}

async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// Serves `app` over TLS until `shutdown` resolves, then lets open requests finish (up to
/// `grace`).
pub async fn serve_tls(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) {
    let graceful = GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: pause instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(error)) => {
                        tracing::debug!(%peer, %error, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                };
            let connection = builder.serve_connection(TokioIo::new(tls), service);
            if let Err(error) = watcher.watch(connection.into_owned()).await {
                tracing::debug!(%peer, %error, "connection ended with an error");
            }
        });
    }
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(grace) => tracing::warn!("connections still open after {grace:?}; closing"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    #[test]
    fn readiness_needs_synced_caches_and_a_certificate() {
        let no_cert = Err("no serving certificate loaded yet");
        let cases = [
            (true, Ok(()), Ok(())),
            (true, no_cert, no_cert),
            (
                false,
                Ok(()),
                Err("MaintenanceWindow and Namespace caches not synced yet"),
            ),
            (
                false,
                no_cert,
                Err("MaintenanceWindow and Namespace caches not synced yet"),
            ),
        ];
        for (caches, certificate, want) in cases {
            assert_eq!(
                readiness(caches, certificate),
                want,
                "{caches} {certificate:?}"
            );
        }
    }

    async fn readyz_of(state: &AppState) -> (StatusCode, String) {
        let response = ops_router(state.clone())
            .oneshot(
                Request::get("/readyz")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("response");
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn readyz_waits_for_a_certificate_and_its_ca_in_every_bundle() {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let state = AppState {
            caches: Caches::fixed(Vec::new()),
            certs: Arc::new(CertStore::untrusted(provider)),
            metrics: Metrics::new().expect("metrics"),
            recreation_users: Arc::new(Vec::new()),
        };
        let (status, body) = readyz_of(&state).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "no serving certificate loaded yet");

        let names = crate::certgen::service_dns_names("lifeguard-webhook", "lifeguard-system");
        let data = crate::certgen::create_all(
            Timestamp::now(),
            jiff::SignedDuration::from_hours(1),
            &names,
        )
        .expect("generated");
        state
            .certs
            .offer(
                &data[crate::certgen::TLS_CRT],
                &data[crate::certgen::TLS_KEY],
                "tls.crt",
                "tls.key",
            )
            .expect("loads");
        let (status, body) = readyz_of(&state).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "managed mode: CA not published yet"
        );
        assert_eq!(
            body,
            "serving certificate not yet in every webhook configuration's caBundle"
        );
        state.certs.mark_trusted();
        assert_eq!(
            readyz_of(&state).await,
            (StatusCode::OK, "ready".to_string())
        );
    }
}
