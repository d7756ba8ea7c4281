//! The Prometheus gate's I/O: one instant query, `GET <url>/api/v1/query?query=...`, over
//! plain HTTP/1.1 (hyper, already in the tree through kube), with a deadline and a bound on
//! the answer's size, so a slow or chatty Prometheus can neither stall nor bloat the
//! window reconciler. What the answer means is `series_in`'s (pure, tested below).

use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// Whole query, connection included.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest answer read: a gate only needs to know whether any series came back, and a
/// query matching thousands of series should not cost the controller megabytes.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Where the controller asks (`--prometheus-url`).
#[derive(Debug, Clone)]
pub struct Prometheus {
    authority: String,
    /// `QUERY_TIMEOUT`; shorter in tests.
    pub timeout: Duration,
    /// Path prefix, without a trailing slash (Prometheus behind `--web.route-prefix`).
    prefix: String,
}

impl Prometheus {
    /// `http://host:port[/prefix]`; https is not supported (say so at start-up).
    pub fn parse(url: &str) -> Result<Self, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!(
                "{url:?}: only http:// URLs are supported, such as http://prometheus.monitoring:9090"
            ));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("{url:?} has no host"))?;
        let authority = match authority.port_u16() {
            Some(_) => authority.to_string(),
            None => format!("{}:80", authority.host()),
        };
        Ok(Self {
            authority,
            timeout: QUERY_TIMEOUT,
            prefix: uri.path().trim_end_matches('/').to_string(),
        })
    }

    /// The number of series `query` returns now, or why it could not be told.
    pub async fn series(&self, query: &str) -> Result<usize, String> {
        let body = tokio::time::timeout(self.timeout, self.get(query))
            .await
            .map_err(|_| format!("no answer within {:?}", self.timeout))??;
        series_in(&body)
    }

    async fn get(&self, query: &str) -> Result<Bytes, String> {
        let stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| format!("connecting to {}: {e}", self.authority))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("HTTP handshake with {}: {e}", self.authority))?;
        // Ended when the answer is in, or when this future is dropped at the deadline.
        let _connection = AbortOnDrop(tokio::spawn(connection));
        let path = format!(
            "{}/api/v1/query?query={}",
            self.prefix,
            encode_query_value(query)
        );
        let request = Request::get(path)
            .header(hyper::header::HOST, &self.authority)
            .header(hyper::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("building the request: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("asking {}: {e}", self.authority));
        match response {
            Ok(response) => {
                let status = response.status();
                match Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                    .collect()
                    .await
                {
                    Ok(body) if status.is_success() => Ok(body.to_bytes()),
                    // Prometheus explains a bad query in the JSON body of a 400.
                    Ok(body) => Err(format!(
                        "HTTP {status}: {}",
                        error_in(&body.to_bytes()).unwrap_or_default()
                    )),
                    Err(e) => Err(format!(
                        "reading the answer (at most {MAX_ANSWER_BYTES} bytes): {e}"
                    )),
                }
            }
            Err(e) => Err(e),
        }
    }
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Percent-encodes a query-string value (RFC 3986 unreserved characters pass).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The number of series in an instant query's answer. Anything but a successful vector
/// or matrix answer is an error: the gate cannot tell, so it holds.
pub fn series_in(body: &[u8]) -> Result<usize, String> {
    let answer: Value =
        serde_json::from_slice(body).map_err(|e| format!("the answer is not JSON: {e}"))?;
    if answer.get("status").and_then(Value::as_str) != Some("success") {
        return Err(format!(
            "the query failed: {}",
            error_text(&answer).unwrap_or_else(|| "no error given".to_string())
        ));
    }
    let data = answer.get("data");
    let kind = data
        .and_then(|d| d.get("resultType"))
        .and_then(Value::as_str);
    match (kind, data.and_then(|d| d.get("result"))) {
        (Some("vector" | "matrix"), Some(Value::Array(series))) => Ok(series.len()),
        (Some(kind), _) => Err(format!(
            "the query returns a {kind}, not series; write it so that it returns series while the drain must wait (for example ALERTS{{alertstate=\"firing\"}})"
        )),
        (None, _) => Err("the answer has no data.resultType".to_string()),
    }
}

fn error_in(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| error_text(&v))
}

fn error_text(answer: &Value) -> Option<String> {
    let text = answer.get("error").and_then(Value::as_str)?;
    // Bounded: the message lands in a condition.
    Some(text.chars().take(300).collect())
}

#[cfg(test)]
#[path = "prometheus_tests.rs"]
mod prometheus_tests;
