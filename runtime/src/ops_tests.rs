//! The ops router answers as the kubelet and Prometheus expect, in process.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::http::Request;
use prometheus::IntGauge;
use tower::ServiceExt;

use super::*;

async fn get_path(app: &Router, path: &str) -> (u16, String) {
    let request = Request::get(path)
        .body(Body::empty())
        .expect("request literal");
    let response = app
        .clone()
        .oneshot(request)
        .await
        .expect("infallible router");
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("small body");
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn readiness_liveness_and_metrics() {
    let registry = Registry::new();
    let gauge = IntGauge::new("lifeguard_test_gauge", "a test gauge").expect("valid gauge");
    registry
        .register(Box::new(gauge.clone()))
        .expect("registered");
    gauge.set(7);
    let ready = Arc::new(AtomicBool::new(false));
    let flag = ready.clone();
    let readiness: Readiness = Arc::new(move || {
        if flag.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err("initial sweep not finished".into())
        }
    });
    let app = router(always_live(), readiness, registry);

    assert_eq!(get_path(&app, "/healthz").await, (200, "ok".into()));
    assert_eq!(
        get_path(&app, "/readyz").await,
        (503, "initial sweep not finished".into()),
        "not ready says why"
    );
    ready.store(true, Ordering::Release);
    assert_eq!(get_path(&app, "/readyz").await, (200, "ready".into()));
    let (code, body) = get_path(&app, "/metrics").await;
    assert_eq!(code, 200);
    assert!(body.contains("lifeguard_test_gauge 7"), "{body}");
    assert_eq!(get_path(&app, "/nowhere").await.0, 404);
}
