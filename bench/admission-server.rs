//! Admission servers for bench/admission-compare, on 127.0.0.1 without a cluster.
//!
//!   admission-server lifeguard ADDR CERT KEY   the real admission router and TLS server,
//!                                              with three MaintenanceWindows in a
//!                                              pre-synced in-memory cache
//!   admission-server in-process BODY N         N reviews through the router in process,
//!                                              against a canned router: lifeguard's own
//!                                              work per review, without the stack
//!   admission-server lifeguard-canned ADDR CERT KEY
//!                                              lifeguard's TLS server and connection
//!                                              layer with a router that answers the
//!                                              canned review: the stack without
//!                                              lifeguard's own work
//!   admission-server bare ADDR CERT KEY        the same stack (tokio, rustls with ring,
//!                                              hyper-util's HTTP/1.1 + HTTP/2 server)
//!                                              reading the body and answering a canned
//!                                              AdmissionReview: no routing, no parsing
//!
//! Built as an example of lifeguard-webhook (webhook/Cargo.toml). bench/admission-compare
//! also builds it against an older revision with `--cfg lifeguard_bench_baseline`, where the
//! router and server had the signatures used in the `baseline` module below.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use axum::body::Body;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::window::CompiledWindow;
use lifeguard_webhook::cache::Caches;
use lifeguard_webhook::metrics::Metrics;
use lifeguard_webhook::server::AppState;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const CANNED: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"bench-0001","allowed":true}}"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    #[cfg(not(lifeguard_bench_baseline))]
    if let [_, mode, body, reviews] = args.as_slice()
        && mode == "in-process"
    {
        return in_process(Path::new(body), reviews.parse()?).await;
    }
    let [_, mode, addr, cert, key] = args.as_slice() else {
        bail!(
            "usage: admission-server lifeguard|lifeguard-canned|bare ADDR CERT KEY, or admission-server in-process BODY N"
        );
    };
    let acceptor = TlsAcceptor::from(Arc::new(tls(Path::new(cert), Path::new(key))?));
    let listener = TcpListener::bind(addr.as_str())
        .await
        .with_context(|| format!("binding {addr}"))?;
    eprintln!("admission-server {mode} serving on {addr}");
    match mode.as_str() {
        "lifeguard" => serve_lifeguard(listener, acceptor, lifeguard_state()?, false).await,
        "lifeguard-canned" => serve_lifeguard(listener, acceptor, lifeguard_state()?, true).await,
        "bare" => serve_bare(listener, acceptor).await,
        other => bail!("unknown mode {other:?}: lifeguard, lifeguard-canned or bare"),
    }
    Ok(())
}

fn lifeguard_state() -> anyhow::Result<AppState> {
    Ok(AppState {
        caches: Caches::fixed(windows()?),
        // The serving certificate is the acceptor's; the store only feeds /readyz.
        #[cfg(not(lifeguard_bench_baseline))]
        certs: Arc::new(lifeguard_webhook::certs::CertStore::new(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))),
        metrics: Metrics::new()?,
        recreation_users: Arc::new(Vec::new()),
        #[cfg(not(lifeguard_bench_baseline))]
        evictions: None,
    })
}

/// What a review costs lifeguard's router itself, with no TLS, TCP or HTTP framing: N
/// reviews of BODY sent to `/validate` in process (`oneshot`), against a router that
/// reads the body and answers the canned review. Three rounds, alternating; prints the
/// time per review of each (one review at a time, so the time is CPU time) and the
/// difference of the medians, lifeguard's own work per review.
#[cfg(not(lifeguard_bench_baseline))]
async fn in_process(body: &Path, reviews: u32) -> anyhow::Result<()> {
    use clap::Parser;
    use lifeguard_webhook::body::BodyBudget;
    use tower::ServiceExt;
    let body = axum::body::Bytes::from(
        std::fs::read(body).with_context(|| format!("reading {}", body.display()))?,
    );
    let config = lifeguard_webhook::flags::Config::parse_from(["lifeguard-webhook"]);
    let lifeguard = lifeguard_webhook::server::admission_router(
        lifeguard_state()?,
        BodyBudget::from_config(&config),
    );
    let bare = canned_router();
    let mut per_review = [Vec::new(), Vec::new()];
    for round in 1..=3 {
        for (i, (name, router)) in [("bare", &bare), ("lifeguard", &lifeguard)]
            .into_iter()
            .enumerate()
        {
            let started = std::time::Instant::now();
            for _ in 0..reviews {
                let request = hyper::Request::post("/validate")
                    .header("content-type", "application/json")
                    .header("content-length", body.len())
                    .body(Body::from(body.clone()))?;
                let response = router.clone().oneshot(request).await?;
                anyhow::ensure!(
                    response.status().is_success(),
                    "{name}: {}",
                    response.status()
                );
                response.into_body().collect().await?;
            }
            let micros = started.elapsed().as_secs_f64() * 1e6 / f64::from(reviews.max(1));
            per_review[i].push(micros);
            println!("{name:<10} round {round}: {micros:6.2} us per review, in process");
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (bare, lifeguard) = (median(&mut per_review[0]), median(&mut per_review[1]));
    println!(
        "medians: bare {bare:.2} us, lifeguard {lifeguard:.2} us; lifeguard's own work {:.2} us per review",
        lifeguard - bare
    );
    Ok(())
}

/// Three windows, none active at bench time, so a workspace-pod CREATE runs the whole gate.
fn windows() -> anyhow::Result<Vec<CompiledWindow>> {
    let specs = [
        json!({"start": "2030-01-01T02:00:00Z", "end": "2030-01-01T04:00:00Z", "message": "upgrade"}),
        json!({"schedule": "0 3 1 1 *", "duration": "1h",
               "namespaceSelector": {"matchLabels": {"team": "ml"}}}),
        json!({"schedule": "30 4 1 1 *", "duration": "2h",
               "workspaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["blue", "red"]}]}}),
    ];
    specs
        .into_iter()
        .enumerate()
        .map(|(i, spec)| {
            let window: MaintenanceWindow = serde_json::from_value(
                json!({"metadata": {"name": format!("w{i}")}, "spec": spec}),
            )?;
            CompiledWindow::compile(&window).map_err(|e| anyhow::anyhow!("window {i}: {e}"))
        })
        .collect()
}

fn tls(cert: &Path, key: &Path) -> anyhow::Result<rustls::ServerConfig> {
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()?;
    let key =
        PrivateKeyDer::from_pem_file(key).with_context(|| format!("reading {}", key.display()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
    .with_no_client_auth()
    .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A router that reads the body and answers the canned review: what is left of lifeguard's
/// admission path without its own work.
fn canned_router() -> axum::Router {
    axum::Router::new().route(
        "/validate",
        axum::routing::post(|_body: axum::body::Bytes| async {
            ([("content-type", "application/json")], CANNED)
        }),
    )
}

/// `canned`: lifeguard's connection layer (`conn::serve_tls`) with `canned_router`.
#[cfg(not(lifeguard_bench_baseline))]
async fn serve_lifeguard(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: AppState,
    canned: bool,
) {
    use clap::Parser;
    use lifeguard_webhook::body::BodyBudget;
    use lifeguard_webhook::conn::{ConnLimits, serve_tls};
    // The production defaults of every limit.
    let config = lifeguard_webhook::flags::Config::parse_from(["lifeguard-webhook"]);
    let metrics = state.metrics.clone();
    let app = if canned {
        canned_router()
    } else {
        lifeguard_webhook::server::admission_router(state, BodyBudget::from_config(&config))
    };
    let limits = ConnLimits::from_config(&config);
    serve_tls(
        listener,
        acceptor,
        app,
        limits,
        metrics,
        std::future::pending(),
        std::time::Duration::ZERO,
    )
    .await;
}

#[cfg(lifeguard_bench_baseline)]
async fn serve_lifeguard(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: AppState,
    canned: bool,
) {
    let app = if canned {
        canned_router()
    } else {
        lifeguard_webhook::server::admission_router(state, 6 * 1024 * 1024)
    };
    lifeguard_webhook::server::serve_tls(
        listener,
        acceptor,
        app,
        std::future::pending(),
        std::time::Duration::ZERO,
    )
    .await;
}

async fn serve_bare(listener: TcpListener, acceptor: TlsAcceptor) {
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let builder = builder.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = hyper::service::service_fn(
                |request: hyper::Request<hyper::body::Incoming>| async move {
                    // Read the whole body, as any real handler must; do nothing with it.
                    let _ = request.into_body().collect().await;
                    Ok::<_, std::convert::Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "application/json")
                            .body(Body::from(CANNED))
                            .unwrap_or_default(),
                    )
                },
            );
            let _ = builder.serve_connection(TokioIo::new(tls), service).await;
        });
    }
}
