//! Serving the admission router over TLS (HTTP/1.1 and HTTP/2) with bounds on what a
//! client can hold: the number of connections, the time to send request headers, the time
//! a connection may sit idle, and the HTTP/2 flow-control windows (the data a peer may
//! push that the webhook has not read yet).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderValue};
use hyper::{Request, Version};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;
use tower::service_fn;

use crate::flags::Config;
use crate::metrics::Metrics;

const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Per-connection HTTP/2 receive windows. They bound what a peer can make the webhook
/// buffer without reading it (while a request waits for body budget): connection window
/// times `max_connections` in the worst case. Admission bodies are a few KiB, so smaller
/// windows than hyper's defaults cost nothing.
const H2_CONNECTION_WINDOW: u32 = 256 * 1024;
const H2_STREAM_WINDOW: u32 = 128 * 1024;
const H2_MAX_STREAMS: u32 = 100;
/// HTTP/1 read buffer (headers and body chunks in flight per connection).
const H1_MAX_BUF: usize = 64 * 1024;

#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    pub max_connections: usize,
    /// HTTP/1: from the start of a request to the end of its headers, but never less than
    /// `idle_timeout` (hyper starts this timer when the previous exchange ends).
    pub header_read_timeout: Duration,
    /// A connection with no bytes read or written for this long is closed gracefully
    /// (HTTP/2 GOAWAY; HTTP/1 closes after the current exchange).
    pub idle_timeout: Duration,
}

impl ConnLimits {
    pub fn from_config(config: &Config) -> Self {
        Self {
            max_connections: config.max_connections,
            header_read_timeout: config.read_timeout,
            idle_timeout: config.idle_timeout,
        }
    }
}

/// After `shutdown`, how long the listener must stay quiet (no new connection) before it
/// is closed. Connections routed here before the endpoint was removed everywhere (an
/// API server's dial racing kube-proxy's update, or one already in the kernel's accept
/// backlog) still arrive for a moment; each is served once and then closed.
const DRAIN_QUIET: Duration = Duration::from_secs(2);

/// Serves `app` over TLS until `shutdown` resolves, then drains (up to `grace`): open
/// connections finish the exchange in progress, an HTTP/1 connection's next answer says
/// `Connection: close`, HTTP/2 ones get a GOAWAY, connections that still arrive are served
/// too, and the listener closes after `DRAIN_QUIET` without one. An idle HTTP/1 connection
/// is never closed from this side while stopping (see `serve`): it ends with its next
/// answer or when its client closes it, so `grace` must outlast the client's idle limit.
/// At `max_connections` no further connection is accepted until one closes: the rest wait
/// in the kernel's accept queue.
pub async fn serve_tls(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    limits: ConnLimits,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) {
    let max_connections = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let server = Arc::new(Server {
        acceptor,
        app,
        limits,
        metrics,
        builder: http_builder(limits),
        slots: Arc::new(Semaphore::new(max_connections)),
        stop: watch::channel(false).0,
    });
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = server.accept(&listener) => accepted,
            () = &mut shutdown => break,
        };
        if let Some(accepted) = accepted {
            server.spawn(accepted);
        }
    }
    let _ = server.stop.send(true);
    let deadline = Instant::now() + grace;
    loop {
        let accepted = tokio::select! {
            accepted = tokio::time::timeout(DRAIN_QUIET, server.accept(&listener)) => accepted,
            () = tokio::time::sleep_until(deadline) => break,
        };
        match accepted {
            Ok(Some(accepted)) => server.spawn(accepted),
            Ok(None) => {}
            Err(_quiet) => break,
        }
    }
    // From here a late connection is refused outright instead of waiting, unanswered, in
    // the backlog until the process exits.
    drop(listener);
    // Every connection holds a slot until it ends: all slots back means all closed.
    let all = u32::try_from(max_connections).unwrap_or(u32::MAX);
    tokio::select! {
        _ = server.slots.acquire_many(all) => {}
        () = tokio::time::sleep_until(deadline) => {
            tracing::warn!("connections still open after {grace:?}; closing");
        }
    }
}

fn http_builder(limits: ConnLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper times an HTTP/1 request's headers from the end of the previous exchange, so
    // its header timer is also the idle limit of a kept-alive connection. At
    // `header_read_timeout` (10 s) it closed idle connections the API server keeps for 90 s
    // and reuses: a POST crossing that close failed with EOF and, failing closed, refused a
    // pod (seen during a 5,000-pod mass start). So the timer gets the idle limit; a slow
    // sender of headers is bounded by it, by `max_connections` and by the NetworkPolicy.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout.max(limits.idle_timeout))
        .max_buf_size(H1_MAX_BUF);
    builder
        .http2()
        .timer(TokioTimer::new())
        .initial_connection_window_size(H2_CONNECTION_WINDOW)
        .initial_stream_window_size(H2_STREAM_WINDOW)
        .max_concurrent_streams(H2_MAX_STREAMS);
    builder
}

/// What every connection task shares.
struct Server {
    acceptor: TlsAcceptor,
    app: Router,
    limits: ConnLimits,
    metrics: Metrics,
    builder: auto::Builder<TokioExecutor>,
    slots: Arc<Semaphore>,
    /// `true` once the server stops: connections close after their current exchange.
    stop: watch::Sender<bool>,
}

/// What a connection has answered so far.
#[derive(Default)]
struct Answered {
    first: Notify,
    http2: AtomicBool,
}

impl Answered {
    fn note(&self, http1: bool) {
        self.http2.store(!http1, Ordering::Relaxed);
        self.first.notify_one();
    }

    fn http2(&self) -> bool {
        self.http2.load(Ordering::Relaxed)
    }
}

type Accepted = (OwnedSemaphorePermit, TcpStream, SocketAddr);

impl Server {
    /// Waits for a free slot, then for a connection; `None` after a failed accept.
    async fn accept(&self, listener: &TcpListener) -> Option<Accepted> {
        let slot = self.slots.clone().acquire_owned().await.ok()?; // never closed
        match listener.accept().await {
            Ok((tcp, peer)) => Some((slot, tcp, peer)),
            Err(error) => {
                // Out of file descriptors and the like: pause instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                None
            }
        }
    }

    fn spawn(self: &Arc<Self>, (slot, tcp, peer): Accepted) {
        let _ = tcp.set_nodelay(true);
        let server = self.clone();
        tokio::spawn(async move {
            let _slot = slot;
            server.metrics.connections.inc();
            let open = server.metrics.connections.clone();
            let _open = scopeguard(move || open.dec());
            server.serve(tcp, peer).await;
        });
    }

    async fn serve(&self, tcp: TcpStream, peer: SocketAddr) {
        let tls = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, self.acceptor.accept(tcp)).await
        {
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
        let activity = Activity::new();
        let io = TokioIo::new(Tracked {
            inner: tls,
            activity: activity.clone(),
        });
        // Noted when the first response is ready: only from then on is the protocol known
        // and a graceful shutdown safe. Before it, hyper's auto connection is still reading
        // the protocol version, and a shutdown there drops the request unanswered.
        let answered = Arc::new(Answered::default());
        let service = {
            let (app, answered, stop) = (self.app.clone(), answered.clone(), self.stop.subscribe());
            TowerToHyperService::new(service_fn(move |request: Request<Incoming>| {
                let (app, answered, stop) = (app.clone(), answered.clone(), stop.clone());
                async move {
                    let http1 = request.version() < Version::HTTP_2;
                    let mut response = app.oneshot(request).await?;
                    if http1 && *stop.borrow() {
                        // The client learns from this answer not to send another request
                        // here; closing the connection instead races with one it may be
                        // sending right now, and a POST that meets a closed connection
                        // fails with EOF (Go's client retries only idempotent requests).
                        response
                            .headers_mut()
                            .insert(CONNECTION, HeaderValue::from_static("close"));
                    }
                    answered.note(http1);
                    Ok::<_, Infallible>(response)
                }
            }))
        };
        let connection = self.builder.serve_connection(io, service);
        tokio::pin!(connection);
        let mut stopping = self.stop.subscribe();
        let mut stop_requested = *stopping.borrow_and_update();
        let mut has_answered = false;
        let mut closing = false;
        loop {
            // While stopping, an idle HTTP/1 connection is left to its client. HTTP/1 has
            // no way to say "send nothing more" except in an answer, and a close from this
            // side can cross a POST the client has just taken from its idle pool: Go does
            // not retry it, and the API server reports EOF (seen once in 7,000 admissions
            // when such connections were closed after 2 s idle). The API server closes its
            // idle connections after 90 s (`flags::API_SERVER_IDLE`); `grace` outlasts that,
            // and `idle_timeout` is longer still.
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%peer, %error, "connection ended with an error");
                    }
                    break;
                }
                _ = stopping.changed(), if !stop_requested => stop_requested = true,
                () = answered.first.notified(), if !has_answered => has_answered = true,
                () = activity.idle_for(self.limits.idle_timeout), if !closing => {
                    tracing::debug!(%peer, "closing idle connection");
                    connection.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
            // HTTP/2 says GOAWAY, after which the client opens no new stream here and
            // retries any this connection did not take.
            if stop_requested && has_answered && answered.http2() && !closing {
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

/// Runs `f` when dropped, however the task ends.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

/// When a connection last moved bytes, in milliseconds since it was accepted.
#[derive(Clone)]
struct Activity {
    start: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    fn touch(&self) {
        self.touch_at(Instant::now());
    }

    fn touch_at(&self, now: Instant) {
        let ms = now.saturating_duration_since(self.start).as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// When the connection turns idle if no bytes move until then; `None` if it is idle
    /// at `now` already.
    fn idle_at(&self, now: Instant, idle: Duration) -> Option<Instant> {
        let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        Some(last + idle).filter(|deadline| *deadline > now)
    }

    /// Resolves once no bytes have moved for `idle`.
    async fn idle_for(&self, idle: Duration) {
        while let Some(deadline) = self.idle_at(Instant::now(), idle) {
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// The TLS stream, noting each read or write that moved bytes.
struct Tracked<T> {
    inner: T,
    activity: Activity,
}

impl<T: AsyncRead + Unpin> AsyncRead for Tracked<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tracked<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod conn_tests;

#[cfg(test)]
#[path = "conn_h2_tests.rs"]
mod conn_h2_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_idle_only_after_a_quiet_idle_timeout() {
        let idle = Duration::from_secs(60);
        let activity = Activity::new();
        let at = |secs: u64| activity.start + Duration::from_secs(secs);
        // (seconds since accept, bytes moved at that moment, turns idle at (None: idle now))
        let steps = [
            (59, false, Some(60)),
            (60, false, None),
            (60, true, Some(120)),
            (90, false, Some(120)),
            (119, true, Some(179)),
            (179, false, None),
        ];
        for (secs, touch, expected) in steps {
            if touch {
                activity.touch_at(at(secs));
            }
            assert_eq!(
                activity.idle_at(at(secs), idle),
                expected.map(at),
                "at {secs} s"
            );
        }
    }
}
