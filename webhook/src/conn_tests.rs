//! The drain after a stop signal, over real TLS connections on loopback: what the API
//! server sees while a webhook replica is replaced in a rolling update.

use std::sync::Arc;

use axum::routing::get;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::oneshot;

use super::*;
use crate::certgen::{CA_CRT, TLS_CRT, TLS_KEY};
use crate::certs::{CertStore, server_config};
use crate::tls_test_support::{connect, material, provider};

const LIMITS: ConnLimits = ConnLimits {
    max_connections: 16,
    header_read_timeout: Duration::from_secs(5),
    idle_timeout: Duration::from_secs(60),
};
/// Longer than any drain the tests expect: reaching it means the drain did not end.
const GRACE: Duration = Duration::from_secs(30);
/// How long a test waits for something the server does at once (or after `DRAIN_QUIET`).
const PROMPTLY: Duration = Duration::from_secs(10);

struct Running {
    addr: SocketAddr,
    ca: Vec<u8>,
    /// Sends the stop signal.
    stop: oneshot::Sender<()>,
    /// Resolves once the server has seen the stop signal.
    stopped: oneshot::Receiver<()>,
    server: tokio::task::JoinHandle<()>,
}

async fn start() -> Running {
    start_with(LIMITS, GRACE).await
}

async fn start_with(limits: ConnLimits, grace: Duration) -> Running {
    let material = material();
    let store = Arc::new(CertStore::new(provider()));
    store
        .offer(&material[TLS_CRT], &material[TLS_KEY], "test", "test")
        .expect("certificate loads");
    let config = server_config(store, provider()).expect("server config");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let (stop, stop_signal) = oneshot::channel::<()>();
    let (seen, stopped) = oneshot::channel();
    let shutdown = async move {
        let _ = stop_signal.await;
        let _ = seen.send(());
    };
    let app = Router::new().route("/ok", get(|| async { "ok" }));
    let metrics = Metrics::new().expect("metrics");
    let server = tokio::spawn(serve_tls(
        listener,
        TlsAcceptor::from(Arc::new(config)),
        app,
        limits,
        metrics,
        shutdown,
        grace,
    ));
    Running {
        addr,
        ca: material[CA_CRT].clone(),
        stop,
        stopped,
        server,
    }
}

/// One HTTP/1.1 request for /ok; the whole response as text, or what went wrong.
async fn get_ok(tls: &mut tokio_rustls::client::TlsStream<TcpStream>) -> Result<String, String> {
    tls.write_all(b"GET /ok HTTP/1.1\r\nhost: webhook\r\n\r\n")
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut response = Vec::new();
    let mut buf = [0u8; 1024];
    let read = async {
        while !String::from_utf8_lossy(&response).ends_with("ok") {
            match tls.read(&mut buf).await {
                Ok(0) => return Err("EOF before a response".to_string()),
                Ok(n) => response.extend_from_slice(&buf[..n]),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        Ok(String::from_utf8_lossy(&response).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .map_err(|_| "no response within 10 s".to_string())?
}

#[tokio::test]
async fn a_connection_arriving_after_the_stop_signal_is_answered() {
    let running = start().await;
    running.stop.send(()).expect("server listening");
    running.stopped.await.expect("server saw the stop signal");
    // kube-proxy or the API server may still route a new connection here for a moment.
    let (mut tls, _) = connect(running.addr, &[&running.ca])
        .await
        .expect("a late connection is still accepted");
    let response = get_ok(&mut tls).await.expect("a late request is answered");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

#[tokio::test]
async fn a_connection_opened_before_the_stop_gets_its_first_request_answered() {
    let running = start().await;
    // TLS is up but no request was sent yet: hyper is still reading the protocol version.
    let (mut tls, _) = connect(running.addr, &[&running.ca])
        .await
        .expect("handshake");
    running.stop.send(()).expect("server listening");
    running.stopped.await.expect("server saw the stop signal");
    let response = get_ok(&mut tls)
        .await
        .expect("the request sent after the stop is answered, not dropped");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

/// A server that served one request on a kept-alive connection and then got the stop
/// signal; that connection, now idle.
struct StoppedWithIdle {
    addr: SocketAddr,
    idle: tokio_rustls::client::TlsStream<TcpStream>,
    server: tokio::task::JoinHandle<()>,
}

async fn stopped_with_idle(limits: ConnLimits, grace: Duration) -> StoppedWithIdle {
    let running = start_with(limits, grace).await;
    let (mut idle, _) = connect(running.addr, &[&running.ca])
        .await
        .expect("handshake");
    get_ok(&mut idle).await.expect("served before the stop");
    running.stop.send(()).expect("server listening");
    running.stopped.await.expect("server saw the stop signal");
    StoppedWithIdle {
        addr: running.addr,
        idle,
        server: running.server,
    }
}

/// Waits until the port refuses connections: the listener closed after `DRAIN_QUIET`
/// without a new connection. Each probe is a connection too, so probes come less often.
async fn wait_refused(addr: SocketAddr) {
    let refused = async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(DRAIN_QUIET + Duration::from_millis(500)).await;
        }
    };
    tokio::time::timeout(PROMPTLY, refused)
        .await
        .expect("after the drain's quiet period the port refuses connections");
}

/// Whether the peer has closed the connection (EOF or an error on read).
async fn closed_by_server(tls: &mut tokio_rustls::client::TlsStream<TcpStream>) -> bool {
    let mut rest = Vec::new();
    let read = tokio::time::timeout(PROMPTLY, tls.read_to_end(&mut rest)).await;
    matches!(read, Ok(Ok(0)) | Ok(Err(_)))
}

#[tokio::test]
async fn an_idle_kept_alive_connection_outlives_the_listener_and_its_next_request_is_answered() {
    // The API server keeps idle connections for 90 s and may send a POST on one at any
    // moment; a close from the webhook's side could cross it (EOF, a refused admission).
    let StoppedWithIdle {
        addr,
        mut idle,
        server,
    } = stopped_with_idle(LIMITS, GRACE).await;
    wait_refused(addr).await;
    assert!(
        !server.is_finished(),
        "the server waits for the idle connection instead of closing it"
    );
    let response = get_ok(&mut idle)
        .await
        .expect("a request on the idle connection, after the listener closed, is answered");
    assert!(
        response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
    assert!(
        closed_by_server(&mut idle).await,
        "closed after that answer"
    );
    tokio::time::timeout(PROMPTLY, server)
        .await
        .expect("the drain ends once the last connection closed")
        .expect("server task");
}

#[tokio::test]
async fn the_drain_ends_when_the_client_closes_its_idle_connection_and_then_refuses_new_ones() {
    let StoppedWithIdle { addr, idle, server } = stopped_with_idle(LIMITS, GRACE).await;
    // As the API server does once the connection sat idle for 90 s.
    drop(idle);
    tokio::time::timeout(PROMPTLY, server)
        .await
        .expect("the drain ends well before the grace period: nothing more is open")
        .expect("server task");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "after the drain the port refuses connections instead of queueing them"
    );
}

#[tokio::test]
async fn a_connection_its_client_never_closes_is_cut_at_the_grace_bound() {
    let grace = Duration::from_secs(3);
    let StoppedWithIdle { server, .. } = stopped_with_idle(LIMITS, grace).await;
    tokio::time::timeout(grace + PROMPTLY, server)
        .await
        .expect("the drain gives up at the grace bound")
        .expect("server task");
}

#[tokio::test]
async fn a_kept_alive_http1_connection_gets_its_next_request_answered_with_connection_close() {
    let StoppedWithIdle { idle: mut tls, .. } = stopped_with_idle(LIMITS, GRACE).await;
    // The API server reuses kept-alive connections: a request it sends now must be
    // answered, not met by a close (Go does not retry a POST that found the connection
    // closed, so the admission would fail with EOF).
    let response = get_ok(&mut tls)
        .await
        .expect("the next request on the kept-alive connection is answered");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("connection: close"),
        "the answer tells the client not to reuse the connection: {response}"
    );
    assert!(
        closed_by_server(&mut tls).await,
        "the server closes the connection after that answer"
    );
}

#[tokio::test]
async fn a_kept_alive_http1_connection_idle_past_the_header_read_timeout_is_still_served() {
    // The API server keeps an idle webhook connection for 90 s and reuses it; a POST that
    // meets a connection the webhook closed fails with EOF. Only `idle_timeout` may close
    // an idle connection, not the header read timeout.
    let limits = ConnLimits {
        header_read_timeout: Duration::from_millis(500),
        ..LIMITS
    };
    let running = start_with(limits, GRACE).await;
    let (mut tls, _) = connect(running.addr, &[&running.ca])
        .await
        .expect("handshake");
    get_ok(&mut tls).await.expect("first request served");
    // The stimulus is the idle time itself: twice the header read timeout.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let response = get_ok(&mut tls)
        .await
        .expect("the next request on the idle kept-alive connection is answered");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    running.server.abort();
}
