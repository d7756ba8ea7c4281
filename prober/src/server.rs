//! The plain-HTTP endpoints. None of them does any checking: they read cached state.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json};
use axum::routing::get;

use crate::state::Shared;
use crate::verdict::Verdict;

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/healthz", get(liveness))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(readiness))
        .route("/status", get(status))
        .route(
            "/metrics",
            get(|State(s): State<Arc<Shared>>| async move { s.metrics.render() }),
        )
        .with_state(shared)
}

/// For kubelet liveness probes: 503 only for a node found unhealthy. Unknown answers 200,
/// so an API-server outage never restarts every prober's neighbour in the fleet.
async fn liveness(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    let verdict = s.verdict();
    let code = match verdict {
        Verdict::Unhealthy => StatusCode::SERVICE_UNAVAILABLE,
        Verdict::Healthy | Verdict::Unknown => StatusCode::OK,
    };
    s.metrics.liveness.with_label_values(&[code.as_str()]).inc();
    (code, verdict.as_str())
}

async fn readiness(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    if s.ready() {
        (StatusCode::OK, "ready")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "checks have not all run yet",
        )
    }
}

async fn status(State(s): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(s.status_json())
}
