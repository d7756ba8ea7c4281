//! The notification flags, checked: where to post, in which format, how long to try.

use std::path::PathBuf;
use std::time::Duration;

use hyper::Uri;

use super::retry::Policy;

/// The body posted per document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The document itself (`docs/operations.md`, "Notifications").
    Json,
    /// A one-alert array for Alertmanager's `POST /api/v2/alerts` (`alertmanager.rs`).
    Alertmanager,
}

/// Where documents go: scheme, address and path of `--notify-url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// Host name or address as written (an IPv6 address without brackets).
    pub host: String,
    pub port: u16,
    pub path_and_query: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Self, String> {
        // The URL is never logged whole (a query may carry a key); errors name its parts.
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("--notify-url is not a URL: {e}"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(
                    "--notify-url must start with http:// or https://, such as http://receiver.ops:8080/lifeguard"
                        .into(),
                );
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| "--notify-url has no host".to_string())?;
        if authority.as_str().contains('@') {
            return Err(
                "--notify-url must not carry credentials (they would show wherever the URL does); put a bearer token in --notify-token-file".into(),
            );
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err("--notify-url has no host".into());
        }
        Ok(Self {
            https,
            host: host.to_string(),
            port: authority.port_u16().unwrap_or(if https { 443 } else { 80 }),
            path_and_query: uri
                .path_and_query()
                .map(|p| p.as_str())
                .filter(|p| !p.is_empty())
                .unwrap_or("/")
                .to_string(),
        })
    }

    /// `host:port` to connect to, and for the Host header.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// What logs say: scheme and address, never the path or query.
    pub fn redacted(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority())
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub target: Target,
    pub format: Format,
    /// Read before each attempt, so a rotated Secret is used without a restart.
    pub token_file: Option<PathBuf>,
    /// One attempt, connection and answer included.
    pub timeout: Duration,
    /// Documents waiting; more are dropped (counted), never waited for.
    pub queue: usize,
    pub policy: Policy,
    pub cluster: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_refused_with_a_reason() {
        let t = |https, host: &str, port, path: &str| Target {
            https,
            host: host.into(),
            port,
            path_and_query: path.into(),
        };
        // (url, want)
        let cases: Vec<(&str, Result<Target, &str>)> = vec![
            (
                "http://198.18.0.1:9595",
                Ok(t(false, "198.18.0.1", 9595, "/")),
            ),
            (
                "https://hooks.example.com/lg?key=1",
                Ok(t(true, "hooks.example.com", 443, "/lg?key=1")),
            ),
            (
                "http://alertmanager.monitoring/api/v2/alerts",
                Ok(t(false, "alertmanager.monitoring", 80, "/api/v2/alerts")),
            ),
            (
                "http://[fd00::1]:8080/x",
                Ok(t(false, "fd00::1", 8080, "/x")),
            ),
            ("ftp://host/", Err("must start with http:// or https://")),
            ("/relative", Err("must start with http:// or https://")),
            (
                "https://user:secret@host/",
                Err("must not carry credentials"),
            ),
            ("not a url", Err("is not a URL")),
        ];
        for (url, want) in cases {
            match (Target::parse(url), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{url}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{url}: {got}"),
                (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
            }
        }
        let target = Target::parse("https://hooks.example.com/lg?key=secret").expect("url");
        assert_eq!(target.redacted(), "https://hooks.example.com:443");
        assert_eq!(
            Target::parse("http://[fd00::1]:8080/")
                .expect("url")
                .authority(),
            "[fd00::1]:8080"
        );
    }
}
