//! In-process tests of the admission router (no TLS, no sockets): what a client sees for
//! oversized, malformed and well-formed bodies, and when the in-flight byte budget is full.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode, header};
use futures::channel::mpsc;
use lifeguard_webhook::body::BodyBudget;
use lifeguard_webhook::cache::Caches;
use lifeguard_webhook::certs::CertStore;
use lifeguard_webhook::metrics::Metrics;
use lifeguard_webhook::server::{AppState, admission_router};
use serde_json::{Value, json};
use tower::ServiceExt;

fn router(total: usize, max_body: usize) -> (Router, Metrics) {
    let metrics = Metrics::new().expect("metrics register");
    let state = AppState {
        caches: Caches::fixed(Vec::new()),
        // The admission routes do not look at the certificate (only /readyz does).
        certs: Arc::new(CertStore::new(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))),
        metrics: metrics.clone(),
        recreation_users: Arc::new(Vec::new()),
        evictions: None,
    };
    let budget = BodyBudget::new(
        total,
        max_body,
        Duration::from_millis(100),
        Duration::from_secs(10),
    );
    (admission_router(state, budget), metrics)
}

fn pod_review() -> Vec<u8> {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "namespace": "team-a",
        "object": {"metadata": {"labels": {"lifeguard.dev/workspace": "a"}}, "spec": {}},
    }})
    .to_string()
    .into_bytes()
}

fn post(path: &str, body: Body, length: Option<usize>) -> Request<Body> {
    let mut request = Request::post(path).header(header::CONTENT_TYPE, "application/json");
    if let Some(length) = length {
        request = request.header(header::CONTENT_LENGTH, length);
    }
    request.body(body).expect("request builds")
}

/// Status, Content-Type and JSON body of the answer.
async fn answer(router: &Router, request: Request<Body>) -> (StatusCode, String, Value) {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body reads");
    let body = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (status, content_type, body)
}

fn error_of(body: &Value) -> &str {
    body["error"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn oversized_bodies_get_413_with_a_json_error() {
    let (router, metrics) = router(1 << 20, 1024);
    let big = vec![b' '; 4096];
    let chunks = big
        .chunks(1000)
        .map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c)))
        .collect::<Vec<_>>();
    let cases: Vec<(&str, Request<Body>)> = vec![
        (
            "declared length",
            post("/validate", Body::from(big.clone()), Some(big.len())),
        ),
        (
            "no length, streamed",
            post(
                "/mutate",
                Body::from_stream(futures::stream::iter(chunks)),
                None,
            ),
        ),
    ];
    for (what, request) in cases {
        let (status, content_type, body) = answer(&router, request).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{what}");
        assert_eq!(content_type, "application/json", "{what}");
        assert_eq!(
            error_of(&body),
            "request body is larger than the limit of 1024 bytes",
            "{what}"
        );
    }
    assert!(
        metrics.render().contains(
            r#"lifeguard_webhook_body_rejections_total{reason="too_large",webhook="validate"} 1"#
        ),
        "{}",
        metrics.render()
    );
}

#[tokio::test]
async fn malformed_reviews_get_400_naming_the_problem() {
    let (router, _) = router(1 << 20, 1 << 20);
    let review = |request: Value| {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
            .to_string()
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "not JSON",
            "{\"apiVersion\": ".into(),
            "request body is not JSON: ",
        ),
        (
            "an older API version",
            r#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}"#.into(),
            "expected apiVersion admission.k8s.io/v1, got \"admission.k8s.io/v1beta1\"",
        ),
        (
            "oldObject not an object",
            review(
                json!({"uid": "u", "kind": {"kind": "Pod"}, "operation": "UPDATE",
                          "object": {}, "oldObject": [1, 2]}),
            ),
            "AdmissionReview request is malformed: oldObject is not a JSON object",
        ),
        (
            "no uid",
            review(json!({"kind": {"kind": "Pod"}, "operation": "CREATE"})),
            "AdmissionReview request is malformed: missing field `uid`",
        ),
    ];
    for (what, text, expected) in cases {
        let length = text.len();
        let (status, content_type, body) =
            answer(&router, post("/validate", Body::from(text), Some(length))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}");
        assert_eq!(content_type, "application/json", "{what}");
        assert!(
            error_of(&body).starts_with(expected),
            "{what}: got {:?}",
            error_of(&body)
        );
    }
}

#[tokio::test]
async fn a_well_formed_review_is_answered_for_its_uid() {
    let (router, _) = router(1 << 20, 1 << 20);
    let review = pod_review();
    let length = review.len();
    let (status, _, body) =
        answer(&router, post("/mutate", Body::from(review), Some(length))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["response"]["uid"], "u-1");
    assert_eq!(body["response"]["patchType"], "JSONPatch");
}

#[tokio::test]
async fn a_full_budget_answers_503_until_room_frees() {
    let mut review = pod_review();
    review.resize(900, b' '); // JSON allows trailing whitespace
    let (router, metrics) = router(1000, 1000);

    // The first request sends its 900 bytes and keeps the body open: it holds them.
    let (mut sender, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    sender
        .try_send(Ok(Bytes::from(review.clone())))
        .expect("channel has room");
    let mut first = Box::pin(router.clone().oneshot(post(
        "/validate",
        Body::from_stream(receiver),
        None,
    )));
    assert!(
        futures::poll!(first.as_mut()).is_pending(),
        "first body still open"
    );

    let second = pod_review();
    let length = second.len();
    let (status, content_type, body) = answer(
        &router,
        post("/validate", Body::from(second.clone()), Some(length)),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(content_type, "application/json");
    assert!(error_of(&body).contains("retry shortly"), "{body}");
    assert!(metrics.render().contains(r#"reason="busy""#));

    drop(sender); // the first body ends; its answer frees the budget
    let first = first.await.expect("infallible");
    assert_eq!(first.status(), StatusCode::OK);
    let (status, _, _) = answer(&router, post("/validate", Body::from(second), Some(length))).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "room again once the first was answered"
    );
}
