//! HTTP surfaces: admission over TLS, and health plus metrics over plain HTTP.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use jiff::Timestamp;
use lifeguard_runtime::ops::{Readiness, always_live};
use serde_json::json;

use crate::body::{BodyBudget, BodyError};
use crate::cache::Caches;
use crate::certs::CertStore;
use crate::decision::{self, Decision, Inputs, NamespaceLabels};
use crate::metrics::Metrics;
use crate::review::{self, AdmissionRequest};

#[derive(Clone)]
pub struct AppState {
    pub caches: Arc<Caches>,
    /// Serving certificate; not ready until one is loaded.
    pub certs: Arc<CertStore>,
    pub metrics: Metrics,
    pub recreation_users: Arc<Vec<String>>,
    /// Decides evictions of workspace pods; `None` where no API server is at hand (tests).
    pub evictions: Option<Arc<crate::eviction::Evictions>>,
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

/// The admission endpoints' state: the shared state plus the body budget. Shared behind one
/// `Arc`: axum clones the state for every request, and cloning `AppState` itself touches
/// one reference count per metric (a profile under load showed the clone and its drop).
struct Admission {
    state: AppState,
    budget: Arc<BodyBudget>,
}

/// `/validate` and `/mutate`. Bodies are read under `budget` (size limit per request and a
/// bound on bytes held across requests); errors are answered as JSON `{"error": ...}`.
pub fn admission_router(state: AppState, budget: BodyBudget) -> Router {
    Router::new()
        .route("/validate", post(validate))
        .route("/mutate", post(mutate))
        // The budget enforces the limit itself (with a JSON answer); axum's default 2 MiB
        // limit applies only to its own extractors, which these handlers do not use.
        .layer(DefaultBodyLimit::disable())
        .with_state(Arc::new(Admission {
            state,
            budget: Arc::new(budget),
        }))
}

pub fn ops_router(state: AppState) -> Router {
    let registry = state.metrics.registry();
    let ready: Readiness = Arc::new(move || {
        readiness(state.caches.is_ready(), state.certs.readiness()).map_err(str::to_owned)
    });
    lifeguard_runtime::ops::router(always_live(), ready, registry)
}

async fn validate(State(admission): State<Arc<Admission>>, request: Request) -> Response {
    receive(&admission, Webhook::Validate, request).await
}

async fn mutate(State(admission): State<Arc<Admission>>, request: Request) -> Response {
    receive(&admission, Webhook::Mutate, request).await
}

/// Reads the body under the budget, then decides; the body's bytes stay counted until the
/// answer is built.
async fn receive(admission: &Admission, webhook: Webhook, request: Request) -> Response {
    let content_length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let metrics = &admission.state.metrics;
    let body = match admission
        .budget
        .read(content_length, request.into_body())
        .await
    {
        Ok(body) => body,
        Err(error) => {
            let (status, reason) = match error {
                BodyError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
                BodyError::Busy { .. } => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
                BodyError::TimedOut(_) => (StatusCode::REQUEST_TIMEOUT, "timed_out"),
                BodyError::Read(_) => (StatusCode::BAD_REQUEST, "read_error"),
            };
            metrics
                .body_rejections
                .with_label_values(&[webhook.label(), reason])
                .inc();
            tracing::warn!(webhook = webhook.label(), %error, "admission body refused");
            let mut response = json_error(status, &error.to_string());
            if status == StatusCode::SERVICE_UNAVAILABLE {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            return response;
        }
    };
    metrics
        .body_bytes_in_flight
        .set(admission.budget.in_flight() as i64);
    let response = admit(&admission.state, webhook, &body.bytes).await;
    drop(body);
    metrics
        .body_bytes_in_flight
        .set(admission.budget.in_flight() as i64);
    response
}

fn json_error(status: StatusCode, message: &str) -> Response {
    let body = json!({ "error": message }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
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
            return json_error(StatusCode::BAD_REQUEST, &error.to_string());
        }
    };
    let outcome = decide(state, webhook, &request).await;
    let body = match review::encode(&request.uid, &outcome) {
        Ok(body) => body,
        // Only a patch that cannot be written as JSON fails here: a defect, said as such.
        Err(error) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
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
    if let Decision::Deny { message, .. } = &outcome {
        tracing::info!(
            uid = %request.uid, kind = %request.kind, namespace = ?request.namespace,
            name = ?request.name, user = %request.username, %message, "denied"
        );
    }
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn decide(state: &AppState, webhook: Webhook, request: &AdmissionRequest) -> Decision {
    if let (Webhook::Validate, "policy", "Eviction") =
        (webhook, request.group.as_str(), request.kind.as_str())
    {
        return match &state.evictions {
            Some(evictions) => evictions.admit(request).await,
            None => Decision::Allow,
        };
    }
    // The namespace's labels only when a window active now selects namespaces. The
    // mutating webhook needs them too: a node-scoped window steers the pods it covers.
    let mut now = Timestamp::now();
    let mut windows = state.caches.windows();
    let namespace = if decision::needs_namespace_labels(&windows, now) {
        let labels = state
            .caches
            .namespace_labels(request.namespace.as_deref())
            .await;
        // A slow lookup decides on fresh windows, at the time it ended.
        windows = state.caches.windows();
        now = Timestamp::now();
        labels
    } else {
        NamespaceLabels::NotLookedUp
    };
    let context = Inputs {
        windows: &windows,
        namespace: &namespace,
        now,
        recreation_users: &state.recreation_users,
    };
    match webhook {
        Webhook::Mutate => decision::mutate(request, &context),
        Webhook::Validate => {
            let (decision, would_deny) = decision::validate_audited(request, &context);
            for window in would_deny {
                state.metrics.would_deny.with_label_values(&[&window]).inc();
            }
            decision
        }
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
            evictions: None,
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
