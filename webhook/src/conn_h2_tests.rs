//! What an HTTP/2 client (the API server's default to a webhook) sees for an oversized
//! body on the real TLS server: a 413 with a JSON error, not a stream reset, and the
//! connection stays usable for the next review.

use std::sync::Arc;

use axum::body::Bytes;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};

use super::*;
use crate::body::BodyBudget;
use crate::cache::Caches;
use crate::certgen::{CA_CRT, TLS_CRT, TLS_KEY};
use crate::certs::{CertStore, server_config};
use crate::server::{AppState, admission_router};
use crate::tls_test_support::{connect_with_alpn, material, provider};

const MAX_BODY: usize = 1024;

/// Starts the admission router over TLS on loopback; returns its address and CA bundle.
async fn start() -> (SocketAddr, Vec<u8>) {
    let material = material();
    let store = Arc::new(CertStore::new(provider()));
    store
        .offer(&material[TLS_CRT], &material[TLS_KEY], "test", "test")
        .expect("certificate loads");
    let config = server_config(store.clone(), provider()).expect("server config");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let metrics = Metrics::new().expect("metrics");
    let state = AppState {
        caches: Caches::fixed(Vec::new()),
        certs: store,
        metrics: metrics.clone(),
        recreation_users: Arc::new(Vec::new()),
        evictions: None,
    };
    let budget = BodyBudget::new(
        1 << 20,
        MAX_BODY,
        Duration::from_millis(100),
        Duration::from_secs(10),
    );
    let limits = ConnLimits {
        max_connections: 16,
        header_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(60),
    };
    tokio::spawn(serve_tls(
        listener,
        TlsAcceptor::from(Arc::new(config)),
        admission_router(state, budget),
        limits,
        metrics,
        std::future::pending(),
        Duration::from_secs(1),
    ));
    (addr, material[CA_CRT].clone())
}

fn pod_review() -> Vec<u8> {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-h2", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "namespace": "team-a",
        "object": {"metadata": {"labels": {"lifeguard.dev/workspace": "a"}}, "spec": {}},
    }})
    .to_string()
    .into_bytes()
}

type ClientBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

fn whole(bytes: Vec<u8>) -> ClientBody {
    Full::new(Bytes::from(bytes))
        .map_err(|never| match never {})
        .boxed()
}

/// Sends one request on `sender`; the status and the JSON body of the answer.
async fn exchange(
    sender: &mut hyper::client::conn::http2::SendRequest<ClientBody>,
    request: hyper::Request<ClientBody>,
) -> (hyper::StatusCode, Value) {
    let response = tokio::time::timeout(Duration::from_secs(10), sender.send_request(request))
        .await
        .expect("answered within 10 s")
        .unwrap_or_else(|e| panic!("HTTP/2 request failed instead of being answered: {e}"));
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("answer body reads")
        .to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    (status, body)
}

fn post(path: &str, body: ClientBody, length: Option<usize>) -> hyper::Request<ClientBody> {
    let mut request = hyper::Request::post(format!("https://webhook{path}"))
        .header("content-type", "application/json");
    if let Some(length) = length {
        request = request.header("content-length", length);
    }
    request.body(body).expect("request builds")
}

#[tokio::test]
async fn an_oversized_body_over_http2_gets_413_and_the_connection_stays_usable() {
    let (addr, ca) = start().await;
    let (tls, _) = connect_with_alpn(addr, &[&ca], &[b"h2"])
        .await
        .expect("TLS connects");
    assert_eq!(
        tls.get_ref().1.alpn_protocol(),
        Some(&b"h2"[..]),
        "server must offer HTTP/2"
    );
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .expect("HTTP/2 handshake");
    tokio::spawn(connection);

    // Declared length: refused before it is read.
    let big = vec![b' '; 64 * MAX_BODY];
    let (status, body) = exchange(
        &mut sender,
        post("/validate", whole(big.clone()), Some(big.len())),
    )
    .await;
    assert_eq!(status, hyper::StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(
        body["error"],
        format!("request body is larger than the limit of {MAX_BODY} bytes")
    );

    // No length, streamed in frames: refused once the limit is crossed.
    let frames = big
        .chunks(4096)
        .map(|c| Ok::<_, std::io::Error>(Frame::data(Bytes::copy_from_slice(c))))
        .collect::<Vec<_>>();
    let (status, body) = exchange(
        &mut sender,
        post(
            "/mutate",
            StreamBody::new(futures::stream::iter(frames)).boxed(),
            None,
        ),
    )
    .await;
    assert_eq!(status, hyper::StatusCode::PAYLOAD_TOO_LARGE, "{body}");

    // The same connection still serves a well-formed review.
    let review = pod_review();
    let length = review.len();
    let (status, body) =
        exchange(&mut sender, post("/validate", whole(review), Some(length))).await;
    assert_eq!(status, hyper::StatusCode::OK, "{body}");
    assert_eq!(body["response"]["uid"], "u-h2");
    assert_eq!(body["response"]["allowed"], true, "{body}");
}
