//! The plain-HTTP endpoints. None of them does any checking: they read cached state.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json};
use axum::routing::get;
use lifeguard_runtime::ops::{Readiness, always_live};

use crate::state::Shared;
use crate::verdict::Verdict;

pub fn router(shared: Arc<Shared>) -> Router {
    let ready = shared.clone();
    let readiness: Readiness = Arc::new(move || {
        if ready.ready() {
            Ok(())
        } else {
            Err("checks have not all run yet".into())
        }
    });
    let live = shared.clone();
    let liveness = get(move || liveness(live.clone()));
    lifeguard_runtime::ops::router(liveness, readiness, shared.metrics.registry()).merge(
        Router::new()
            .route("/livez", always_live())
            .route("/status", get(status))
            .with_state(shared),
    )
}

/// For kubelet liveness probes: 503 only for a node found unhealthy. Unknown answers 200,
/// so an API-server outage never restarts every prober's neighbour in the fleet; so does
/// Cordoned, so a drain restarts nothing.
async fn liveness(s: Arc<Shared>) -> impl IntoResponse {
    let verdict = s.verdict();
    let code = match verdict {
        Verdict::Unhealthy => StatusCode::SERVICE_UNAVAILABLE,
        Verdict::Healthy | Verdict::Unknown | Verdict::Cordoned => StatusCode::OK,
    };
    s.metrics.liveness.with_label_values(&[code.as_str()]).inc();
    (code, verdict.as_str())
}

async fn status(State(s): State<Arc<Shared>>) -> Json<serde_json::Value> {
    Json(s.status_json())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    use super::*;
    use crate::metrics::Metrics;
    use crate::verdict::{Check, Outcome};

    async fn code(app: &Router, path: &str) -> u16 {
        let request = Request::get(path).body(Body::empty()).expect("request");
        match app.clone().oneshot(request).await {
            Ok(response) => response.status().as_u16(),
            Err(never) => match never {},
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn liveness_fails_only_for_an_unhealthy_node() {
        let metrics = Metrics::new().expect("metrics");
        let (shared, _published) = Shared::new("n1".into(), serde_json::json!({}), metrics, 2);
        let shared = Arc::new(shared);
        let app = router(shared.clone());
        let took = Duration::from_millis(1);

        assert_eq!(code(&app, "/healthz").await, 200, "unknown at start");
        assert_eq!(code(&app, "/readyz").await, 503, "no check has run");
        assert_eq!(code(&app, "/livez").await, 200);
        shared.record(Check::Volume, Outcome::Success, took);
        shared.record(Check::Container, Outcome::Unknown("API down".into()), took);
        assert_eq!(code(&app, "/readyz").await, 200);
        assert_eq!(code(&app, "/healthz").await, 200, "unknown: API trouble");
        shared.record(Check::Volume, Outcome::Failure("ro".into()), took);
        shared.record(Check::Volume, Outcome::Failure("ro".into()), took);
        assert_eq!(code(&app, "/healthz").await, 503, "unhealthy");
        shared.record(Check::Volume, Outcome::Success, took);
        shared.record(Check::Container, Outcome::Success, took);
        assert_eq!(code(&app, "/healthz").await, 200, "healthy");
        let status = shared.status_json();
        assert_eq!(status["verdict"], "healthy");
        assert_eq!(status["checks"]["volume"]["lastFailure"], "ro");
        assert_eq!(code(&app, "/metrics").await, 200);
        let text = shared.metrics.render();
        assert!(
            text.contains("lifeguard_prober_liveness_responses_total{code=\"503\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("lifeguard_prober_verdict{verdict=\"healthy\"} 1"),
            "{text}"
        );
    }

    #[test]
    fn a_held_back_taint_shows_in_status_and_metrics() {
        use crate::taint::{Fleet, TaintPolicy, TaintState, TaintStatus};
        let metrics = Metrics::new().expect("metrics");
        let (shared, _published) = Shared::new("n1".into(), serde_json::json!({}), metrics, 2);
        let policy = TaintPolicy {
            enabled: true,
            max_share: 0.5,
            spread: Duration::from_secs(30),
        };
        assert_eq!(shared.status_json()["taint"]["state"], "off");
        shared.set_taint(TaintStatus {
            state: TaintState::HeldBack {
                fleet: Fleet {
                    nodes: 4,
                    tainted: 3,
                },
                why: "taint held back: 3 of 4".into(),
            },
            ..TaintStatus::new(&policy)
        });
        let taint = &shared.status_json()["taint"];
        assert_eq!(taint["state"], "heldBack", "{taint}");
        assert_eq!(taint["enabled"], true);
        assert_eq!(taint["maxTaintedShare"], 0.5);
        assert_eq!(
            taint["fleet"],
            serde_json::json!({"nodes": 4, "tainted": 3})
        );
        assert_eq!(taint["why"], "taint held back: 3 of 4");
        assert!(
            shared
                .metrics
                .render()
                .contains("lifeguard_prober_taint_held_back 1"),
            "{}",
            shared.metrics.render()
        );
        shared.set_taint(TaintStatus {
            state: TaintState::Applied,
            ..TaintStatus::new(&policy)
        });
        assert_eq!(shared.status_json()["taint"]["state"], "applied");
        assert!(
            shared
                .metrics
                .render()
                .contains("lifeguard_prober_taint_held_back 0")
        );
    }
}
