//! A notification receiver for the e2e tests: a plain HTTP/1.1 listener on the host, where
//! the local overlay points the controller (`--notify-url`), recording each request and
//! answering it with the status the test chooses.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Where the controller posts in the local cluster: node 1's address on the host
/// (cluster/config.sh), which pods reach like the API server's; see manifests/local.
pub const NOTIFY_RECEIVER: &str = "198.18.0.1:9595";
/// The path in the local overlay's `--notify-url`.
pub const NOTIFY_PATH: &str = "/lifeguard";

/// Bounds on what is read of one request: the controller's documents are a few hundred
/// bytes.
const MAX_HEAD: usize = 16 << 10;
const MAX_BODY: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct Received {
    /// Who sent it (the leader pod's address).
    pub peer: SocketAddr,
    pub path: String,
    pub content_type: Option<String>,
    pub body: Value,
    /// What the receiver answered.
    pub status: u16,
    pub at: jiff::Timestamp,
}

type Answer = dyn Fn(&Value, &[Received]) -> u16 + Send + Sync;

/// Listens until dropped.
pub struct Receiver {
    seen: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// `answer` picks the status of each request from its body and what came before.
    pub async fn bind(
        addr: &str,
        answer: impl Fn(&Value, &[Received]) -> u16 + Send + Sync + 'static,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr).await.with_context(|| {
            format!("binding the notification receiver on {addr} (is another run of this test going on?)")
        })?;
        let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
        let answer: Arc<Answer> = Arc::new(answer);
        let record = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, peer)) = listener.accept().await {
                let (record, answer) = (record.clone(), answer.clone());
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, peer, &record, &*answer).await {
                        eprintln!("notification receiver: request from {peer}: {e:#}");
                    }
                });
            }
        });
        Ok(Self { seen, task })
    }

    /// Every request so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    seen: &Mutex<Vec<Received>>,
    answer: &Answer,
) -> anyhow::Result<()> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buf).await?;
        anyhow::ensure!(n > 0, "closed before the request's head ended");
        raw.extend_from_slice(&buf[..n]);
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        anyhow::ensure!(raw.len() <= MAX_HEAD, "request head over {MAX_HEAD} bytes");
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default().to_string();
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let length: usize = header("content-length")
        .context("no content-length")?
        .parse()
        .context("content-length")?;
    anyhow::ensure!(length <= MAX_BODY, "body of {length} bytes");
    let mut body = raw[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await?;
        anyhow::ensure!(n > 0, "closed before the body ended");
        body.extend_from_slice(&buf[..n]);
    }
    body.truncate(length);
    let body: Value = serde_json::from_slice(&body).context("the body is not JSON")?;
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(
        request_line.starts_with("POST "),
        "not a POST: {request_line}"
    );
    let status = {
        let mut seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let status = answer(&body, &seen);
        seen.push(Received {
            peer,
            path,
            content_type: header("content-type"),
            body,
            status,
            at: jiff::Timestamp::now(),
        });
        status
    };
    let reply = format!("HTTP/1.1 {status} E2E\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await?;
    Ok(())
}
