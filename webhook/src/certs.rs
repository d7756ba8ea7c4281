//! The serving certificate: one resolver, fed either by files or by the managed Secret.
//!
//! Each TLS handshake picks up the current key; connections already open keep theirs, so
//! swapping the certificate never drops a connection or fails an in-flight request.
//!
//! File mode: Kubernetes updates a mounted Secret by swapping a `..data` symlink, so
//! watching the file itself misses changes; polling the content is simple and catches
//! every way of replacing it. Secret mode: `manager` hands over `tls.crt`/`tls.key`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::metrics::Metrics;

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin} holds no PEM certificate")]
    NoCertificate { origin: String },
    #[error("{origin}: {message}")]
    BadPem { origin: String, message: String },
    #[error("{origin}: key not usable: {message}")]
    BadKey { origin: String, message: String },
}

/// PEM as last loaded, so an offer of the same bytes does no parsing.
#[derive(PartialEq)]
struct Pem {
    cert: Vec<u8>,
    key: Vec<u8>,
}

struct Served {
    key: Arc<CertifiedKey>,
    pem: Pem,
    /// `notAfter` of the leaf, seconds since the epoch.
    not_after: Option<i64>,
}

/// The resolver rustls asks on every handshake. Empty until the first certificate is
/// offered: handshakes fail then, and `/readyz` says not ready.
pub struct CertStore {
    provider: Arc<CryptoProvider>,
    current: RwLock<Option<Served>>,
    /// False while the managed mode has not yet seen its CA in every caBundle: serving
    /// before that would only fail admissions with an unknown-CA error.
    trusted: AtomicBool,
}

impl std::fmt::Debug for CertStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertStore")
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

fn certified_key(
    pem: &Pem,
    cert_origin: &str,
    key_origin: &str,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, CertError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem.cert)
        .collect::<Result<_, _>>()
        .map_err(|e| CertError::BadPem {
            origin: cert_origin.to_string(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(CertError::NoCertificate {
            origin: cert_origin.to_string(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&pem.key).map_err(|e| CertError::BadPem {
        origin: key_origin.to_string(),
        message: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| CertError::BadKey {
        origin: key_origin.to_string(),
        message: e.to_string(),
    })
}

fn not_after(cert: &CertificateDer<'_>) -> Option<i64> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert).ok()?;
    Some(parsed.validity().not_after.timestamp())
}

impl CertStore {
    pub fn new(provider: Arc<CryptoProvider>) -> Self {
        Self {
            provider,
            current: RwLock::new(None),
            trusted: AtomicBool::new(true),
        }
    }

    /// For the managed mode: not ready until [`CertStore::mark_trusted`].
    pub fn untrusted(provider: Arc<CryptoProvider>) -> Self {
        let store = Self::new(provider);
        store.trusted.store(false, Ordering::Release);
        store
    }

    /// The API server trusts what is served (every caBundle carries its CA). Never reset:
    /// a later API hiccup must not flap readiness.
    pub fn mark_trusted(&self) {
        self.trusted.store(true, Ordering::Release);
    }

    /// `Ok` when a certificate is loaded and trusted; otherwise why not, for `/readyz`.
    pub fn readiness(&self) -> Result<(), &'static str> {
        if !self.is_loaded() {
            Err("no serving certificate loaded yet")
        } else if !self.trusted.load(Ordering::Acquire) {
            Err("serving certificate not yet in every webhook configuration's caBundle")
        } else {
            Ok(())
        }
    }

    /// Serves this pair from the next handshake on; `Ok(false)` when it is already served.
    /// A broken or mismatched pair is an error and the previous certificate stays.
    /// `origin` names where the pair came from, for error messages.
    pub fn offer(
        &self,
        cert_pem: &[u8],
        key_pem: &[u8],
        cert_origin: &str,
        key_origin: &str,
    ) -> Result<bool, CertError> {
        let pem = Pem {
            cert: cert_pem.to_vec(),
            key: key_pem.to_vec(),
        };
        if let Ok(current) = self.current.read()
            && current.as_ref().is_some_and(|served| served.pem == pem)
        {
            return Ok(false);
        }
        let key = certified_key(&pem, cert_origin, key_origin, &self.provider)?;
        let not_after = key.end_entity_cert().ok().and_then(not_after);
        let mut current = self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = Some(Served {
            key: Arc::new(key),
            pem,
            not_after,
        });
        Ok(true)
    }

    pub fn is_loaded(&self) -> bool {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_some()
    }

    /// `notAfter` of the served certificate, seconds since the epoch.
    pub fn not_after(&self) -> Option<i64> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .as_ref()
            .and_then(|served| served.not_after)
    }

    fn key(&self) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .as_ref()
            .map(|served| served.key.clone())
    }

    /// Sets the expiry gauge after a swap.
    pub fn record(&self, metrics: &Metrics) {
        if let Some(not_after) = self.not_after() {
            metrics.certificate_expiry.set(not_after);
        }
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.key()
    }
}

/// A certificate and key read from files (`--tls-cert`, `--tls-key`).
#[derive(Debug, Clone)]
pub struct FileSource {
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
}

fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|source| CertError::Read {
        path: path.to_path_buf(),
        source,
    })
}

impl FileSource {
    /// Reads the files and offers them to `store`; `Ok(true)` when a new certificate is
    /// now served.
    pub fn load_into(&self, store: &CertStore) -> Result<bool, CertError> {
        let cert = read(&self.cert_path)?;
        let key = read(&self.key_path)?;
        store.offer(
            &cert,
            &key,
            &self.cert_path.display().to_string(),
            &self.key_path.display().to_string(),
        )
    }

    /// Polls the files until the process ends, logging and counting every reload. A
    /// half-written or mismatched pair is reported and the previous certificate stays.
    pub async fn watch(self, store: Arc<CertStore>, every: Duration, metrics: Metrics) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match self.load_into(&store) {
                Ok(false) => {}
                Ok(true) => {
                    metrics.cert_reloads.with_label_values(&["success"]).inc();
                    store.record(&metrics);
                    tracing::info!(cert = %self.cert_path.display(), "serving certificate reloaded");
                }
                Err(error) => {
                    metrics.cert_reloads.with_label_values(&["error"]).inc();
                    tracing::warn!(%error, "serving certificate not reloaded; keeping the previous one");
                }
            }
        }
    }
}

/// TLS 1.2 and 1.3 with the ring provider; HTTP/2 and HTTP/1.1 offered (the API server
/// uses either).
pub fn server_config(
    store: Arc<CertStore>,
    provider: Arc<CryptoProvider>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(store);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
#[path = "certs_tests.rs"]
mod certs_tests;
