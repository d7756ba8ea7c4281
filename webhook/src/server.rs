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
use crate::decision::{self, Context};
use crate::metrics::Metrics;
use crate::review::{self, AdmissionRequest, Outcome};

#[derive(Clone)]
pub struct AppState {
    pub caches: Arc<Caches>,
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
    admit(&state, Webhook::Validate, &body).await
}

async fn mutate(State(state): State<AppState>, body: Bytes) -> Response {
    admit(&state, Webhook::Mutate, &body).await
}

async fn admit(state: &AppState, webhook: Webhook, body: &[u8]) -> Response {
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
    let outcome = decide(state, webhook, &request).await;
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

async fn decide(state: &AppState, webhook: Webhook, request: &AdmissionRequest) -> Outcome {
    match webhook {
        Webhook::Mutate => decision::mutate(request),
        Webhook::Validate => {
            // Resolved before reading the windows, so a slow lookup decides on fresh ones.
            let namespace = state
                .caches
                .namespace_labels(request.namespace.as_deref())
                .await;
            let windows = state.caches.windows();
            let context = Context {
                windows: &windows,
                namespace: &namespace,
                now: Timestamp::now(),
                recreation_users: &state.recreation_users,
            };
            decision::validate(request, &context)
        }
    }
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.caches.is_ready() {
        (StatusCode::OK, "ready").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "MaintenanceWindow and Namespace caches not synced yet",
        )
            .into_response()
    }
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
