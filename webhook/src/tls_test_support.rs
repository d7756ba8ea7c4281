//! TLS material and a client for tests that run a real server over loopback.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls_pki_types::CertificateDer;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::certgen::{self, SecretData};

pub const NAME: &str = "lifeguard-webhook.lifeguard-system.svc";

pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

pub fn material() -> SecretData {
    let names = certgen::service_dns_names("lifeguard-webhook", "lifeguard-system");
    certgen::create_all(Timestamp::now(), SignedDuration::from_hours(24), &names)
        .expect("generated")
}

/// Connects trusting the CAs of `bundles`, returns the stream and the served leaf (DER).
pub async fn connect(
    addr: std::net::SocketAddr,
    bundles: &[&[u8]],
) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, Vec<u8>), String> {
    connect_with_alpn(addr, bundles, &[]).await
}

/// As `connect`, offering the ALPN protocols `alpn` (for example `h2`).
pub async fn connect_with_alpn(
    addr: std::net::SocketAddr,
    bundles: &[&[u8]],
    alpn: &[&[u8]],
) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, Vec<u8>), String> {
    let mut roots = RootCertStore::empty();
    for bundle in bundles {
        for der in certgen::der_certificates(bundle) {
            roots
                .add(CertificateDer::from(der))
                .map_err(|e| e.to_string())?;
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = rustls_pki_types::ServerName::try_from(NAME).map_err(|e| e.to_string())?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let served = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|der| der.as_ref().to_vec())
        .ok_or("no peer certificate")?;
    Ok((tls, served))
}
