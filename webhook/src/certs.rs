//! The serving certificate, re-read when its files change.
//!
//! Kubernetes updates a mounted Secret by swapping a `..data` symlink, so watching the file
//! itself misses changes; polling the content is simple and catches every way of replacing
//! it. Each TLS handshake picks up the current key; connections already open keep theirs.

use std::path::{Path, PathBuf};
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
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("{path}: {message}")]
    BadPem { path: PathBuf, message: String },
    #[error("{path}: key not usable: {message}")]
    BadKey { path: PathBuf, message: String },
}

/// Files as last loaded, so a poll that finds them unchanged does no parsing.
#[derive(PartialEq)]
struct Loaded {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

pub struct CertStore {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<(Arc<CertifiedKey>, Loaded)>,
}

impl std::fmt::Debug for CertStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertStore")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|source| CertError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn certified_key(
    loaded: &Loaded,
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, CertError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&loaded.cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| CertError::BadPem {
            path: cert_path.to_path_buf(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(CertError::NoCertificate {
            path: cert_path.to_path_buf(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&loaded.key_pem).map_err(|e| CertError::BadPem {
        path: key_path.to_path_buf(),
        message: e.to_string(),
    })?;
    let bad_key = |message: String| CertError::BadKey {
        path: key_path.to_path_buf(),
        message,
    };
    let certified =
        CertifiedKey::from_der(chain, key, provider).map_err(|e| bad_key(e.to_string()))?;
    Ok(certified)
}

impl CertStore {
    pub fn load(
        cert_path: &Path,
        key_path: &Path,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, CertError> {
        let loaded = Loaded {
            cert_pem: read(cert_path)?,
            key_pem: read(key_path)?,
        };
        let key = certified_key(&loaded, cert_path, key_path, &provider)?;
        Ok(Self {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            provider,
            current: RwLock::new((Arc::new(key), loaded)),
        })
    }

    /// Re-reads the files; `Ok(true)` when a new certificate is now served. A half-written
    /// or mismatched pair is reported and the previous certificate stays in use.
    pub fn reload(&self) -> Result<bool, CertError> {
        let loaded = Loaded {
            cert_pem: read(&self.cert_path)?,
            key_pem: read(&self.key_path)?,
        };
        if let Ok(current) = self.current.read()
            && current.1 == loaded
        {
            return Ok(false);
        }
        let key = certified_key(&loaded, &self.cert_path, &self.key_path, &self.provider)?;
        let mut current = self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = (Arc::new(key), loaded);
        Ok(true)
    }

    fn key(&self) -> Arc<CertifiedKey> {
        let current = self
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        current.0.clone()
    }

    /// Polls the files until the process ends, logging and counting every reload.
    pub async fn watch(self: Arc<Self>, every: Duration, metrics: Metrics) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match self.reload() {
                Ok(false) => {}
                Ok(true) => {
                    metrics.cert_reloads.with_label_values(&["success"]).inc();
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

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.key())
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
