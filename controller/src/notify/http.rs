//! One notification attempt: `POST` of a body to `--notify-url` over HTTP/1.1 (hyper, as
//! the Prometheus gate does), through TLS with the system's CA roots for https, with an
//! optional bearer token, all within one deadline; a fresh connection per attempt, so a
//! receiver that went away leaves nothing stale behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue, RETRY_AFTER, USER_AGENT};
use hyper::rt::{Read, Write};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio_rustls::TlsConnector;

use super::settings::{Settings, Target};

/// Largest answer read (and thrown away): receivers say little, and a chatty one must not
/// cost memory.
const MAX_ANSWER_BYTES: usize = 64 << 10;
/// Largest token file read: a bearer token is a few hundred bytes.
const MAX_TOKEN_BYTES: u64 = 16 << 10;

/// What an attempt that got an answer learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<Duration>,
}

/// Why an attempt got no answer; `reason` is the failure metric's label. The text never
/// holds the token or the URL's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub reason: &'static str,
    pub detail: String,
}

fn failed(reason: &'static str, detail: impl std::fmt::Display) -> Failed {
    Failed {
        reason,
        detail: detail.to_string(),
    }
}

pub struct Endpoint {
    target: Target,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    token_file: Option<PathBuf>,
    timeout: Duration,
    content_type: &'static str,
}

impl Endpoint {
    /// Fails at start-up when https is asked for and no CA root can be loaded.
    pub fn new(settings: &Settings) -> Result<Self, String> {
        let tls = if settings.target.https {
            Some(tls_connector(&settings.target.host)?)
        } else {
            None
        };
        Ok(Self {
            target: settings.target.clone(),
            tls,
            token_file: settings.token_file.clone(),
            timeout: settings.timeout,
            content_type: "application/json",
        })
    }

    pub fn redacted(&self) -> String {
        self.target.redacted()
    }

    pub async fn post(&self, body: Bytes) -> Result<Answer, Failed> {
        tokio::time::timeout(self.timeout, self.attempt(body))
            .await
            .map_err(|_| failed("timeout", format!("no answer within {:?}", self.timeout)))?
    }

    async fn attempt(&self, body: Bytes) -> Result<Answer, Failed> {
        let mut request = Request::post(&self.target.path_and_query)
            .header(HOST, self.target.authority())
            .header(CONTENT_TYPE, self.content_type)
            .header(
                USER_AGENT,
                concat!("lifeguard-controller/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(body))
            .map_err(|e| failed("protocol", format!("building the request: {e}")))?;
        if let Some(file) = &self.token_file {
            let token = read_token(file).await?;
            request.headers_mut().insert(AUTHORIZATION, token);
        }
        let authority = self.target.authority();
        let tcp = tokio::net::TcpStream::connect(&authority)
            .await
            .map_err(|e| failed("connect", format!("connecting to {}: {e}", self.redacted())))?;
        match &self.tls {
            None => send(TokioIo::new(tcp), request).await,
            Some((connector, name)) => {
                let stream = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| failed("tls", format!("TLS with {}: {e}", self.redacted())))?;
                send(TokioIo::new(stream), request).await
            }
        }
    }
}

async fn send<IO>(io: IO, request: Request<Full<Bytes>>) -> Result<Answer, Failed>
where
    IO: Read + Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| failed("protocol", format!("HTTP handshake: {e}")))?;
    // Ended with the answer, or when this future is dropped at the deadline.
    let _connection = AbortOnDrop(tokio::spawn(connection));
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| failed("connect", format!("sending: {e}")))?;
    let status: StatusCode = response.status();
    let retry_after = super::retry::retry_after(
        response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok()),
    );
    // Read so the receiver sees its answer taken; what it says does not matter.
    let _ = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await;
    Ok(Answer {
        status: status.as_u16(),
        retry_after,
    })
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The `Authorization` header from the token file, marked sensitive (never printed by
/// hyper's debug output). Errors name the file, never its contents.
async fn read_token(file: &Path) -> Result<HeaderValue, Failed> {
    use tokio::io::AsyncReadExt;
    let unreadable =
        |e: std::io::Error| failed("token", format!("reading {}: {e}", file.display()));
    let handle = tokio::fs::File::open(file).await.map_err(unreadable)?;
    let mut raw = Vec::new();
    handle
        .take(MAX_TOKEN_BYTES + 1)
        .read_to_end(&mut raw)
        .await
        .map_err(unreadable)?;
    if raw.len() as u64 > MAX_TOKEN_BYTES {
        return Err(failed(
            "token",
            format!("{} is longer than {MAX_TOKEN_BYTES} bytes", file.display()),
        ));
    }
    let token = String::from_utf8(raw)
        .map_err(|_| failed("token", format!("{} is not UTF-8 text", file.display())))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(failed("token", format!("{} is empty", file.display())));
    }
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
        failed(
            "token",
            format!("{} holds characters a header cannot carry", file.display()),
        )
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// TLS 1.2+ with the system's CA roots (`SSL_CERT_FILE`/`SSL_CERT_DIR` are honoured, for a
/// private CA mounted into the pod), HTTP/1.1 only.
fn tls_connector(host: &str) -> Result<(TlsConnector, ServerName<'static>), String> {
    let loaded = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(loaded.certs);
    if added == 0 {
        let why = loaded
            .errors
            .first()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(format!(
            "an https --notify-url needs the system's CA certificates, and none could be loaded{why} (set SSL_CERT_FILE to a mounted CA bundle)"
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| format!("--notify-url host {host:?} cannot be checked by TLS: {e}"))?;
    Ok((TlsConnector::from(Arc::new(config)), name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_token_file_is_read_trimmed_bounded_and_never_shown() {
        let dir = std::env::temp_dir().join(format!("lg-notify-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let write = |name: &str, content: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, content).expect("write");
            path
        };
        let good = write("good", b"s3cret-token\n");
        let value = read_token(&good).await.expect("token");
        assert_eq!(value.to_str().ok(), Some("Bearer s3cret-token"));
        assert!(value.is_sensitive());
        assert!(!format!("{value:?}").contains("s3cret"));
        // (file content, want reason, want text)
        let cases: [(&str, &[u8], &str); 3] = [
            ("empty", b" \n", "is empty"),
            ("binary", b"\xff\xfe", "is not UTF-8"),
            (
                "newline-inside",
                b"a\nb",
                "characters a header cannot carry",
            ),
        ];
        for (name, content, want) in cases {
            let err = read_token(&write(name, content)).await.expect_err(name);
            assert_eq!(err.reason, "token", "{name}");
            assert!(err.detail.contains(want), "{name}: {}", err.detail);
        }
        let huge = write("huge", &vec![b'a'; (MAX_TOKEN_BYTES + 1) as usize]);
        let err = read_token(&huge).await.expect_err("huge");
        assert!(err.detail.contains("longer than"), "{}", err.detail);
        let err = read_token(&dir.join("missing")).await.expect_err("missing");
        assert_eq!(err.reason, "token");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
