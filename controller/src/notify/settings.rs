//! The notification flags, checked: where to post, in which format, how long to try.

use std::path::PathBuf;
use std::time::Duration;

use hyper::Uri;
use jiff::SignedDuration;

use super::retry::Policy;
use crate::flags::Config;

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

/// Bounds of the flags: a deadline past a minute would let one hung receiver hold every
/// document behind it that long; a queue past 100,000 documents (a few KiB each) would cost
/// the controller hundreds of megabytes while the receiver is away.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_QUEUE: usize = 100_000;
const FIRST_RETRY: Duration = Duration::from_secs(1);

fn positive(flag: &str, d: SignedDuration) -> Result<Duration, String> {
    Duration::try_from(d)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{flag} ({d:#}) must be longer than zero"))
}

impl Settings {
    /// `None` without `--notify-url`: notifications are off.
    pub fn from_config(config: &Config) -> Result<Option<Self>, String> {
        let Some(url) = config.notify_url.as_deref().filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        let target = Target::parse(url)?;
        let timeout = positive("--notify-timeout", config.notify_timeout)?;
        if timeout > MAX_TIMEOUT {
            return Err(format!(
                "--notify-timeout ({:#}) must be at most 1m",
                config.notify_timeout
            ));
        }
        if config.notify_queue == 0 || config.notify_queue > MAX_QUEUE {
            return Err(format!(
                "--notify-queue ({}) must be between 1 and {MAX_QUEUE}",
                config.notify_queue
            ));
        }
        let max = positive("--notify-backoff-max", config.notify_backoff_max)?.max(FIRST_RETRY);
        let give_up_after = positive("--notify-give-up-after", config.notify_give_up_after)?;
        Ok(Some(Self {
            target,
            format: config.notify_format,
            token_file: config.notify_token_file.clone(),
            timeout,
            queue: config.notify_queue,
            policy: Policy {
                first: FIRST_RETRY,
                max,
                give_up_after,
            },
            cluster: config.notify_cluster.clone().filter(|c| !c.is_empty()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn settings(args: &[&str]) -> Result<Option<Settings>, String> {
        let argv = std::iter::once("lifeguard-controller").chain(args.iter().copied());
        Settings::from_config(&Config::try_parse_from(argv).expect("flags parse"))
    }

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

    #[test]
    fn off_by_default_and_flags_are_bounded() {
        assert!(settings(&[]).expect("defaults").is_none());
        let on = settings(&["--notify-url=http://r:1/", "--notify-cluster=eu-1"])
            .expect("valid")
            .expect("on");
        assert_eq!(on.format, Format::Json);
        assert_eq!(on.timeout, Duration::from_secs(5));
        assert_eq!(on.queue, 1000);
        assert_eq!(
            on.policy,
            Policy {
                first: Duration::from_secs(1),
                max: Duration::from_secs(60),
                give_up_after: Duration::from_secs(1800)
            }
        );
        assert_eq!(on.cluster.as_deref(), Some("eu-1"));
        let refused = [
            (
                "--notify-timeout=0s",
                "--notify-timeout (0s) must be longer than zero",
            ),
            (
                "--notify-timeout=2m",
                "--notify-timeout (2m) must be at most 1m",
            ),
            (
                "--notify-queue=0",
                "--notify-queue (0) must be between 1 and 100000",
            ),
            (
                "--notify-give-up-after=0s",
                "--notify-give-up-after (0s) must be longer than zero",
            ),
        ];
        for (flag, want) in refused {
            let err = settings(&["--notify-url=http://r:1/", flag]).expect_err(flag);
            assert_eq!(err, want, "{flag}");
        }
        let am = settings(&[
            "--notify-url=http://am:9093/api/v2/alerts",
            "--notify-format=alertmanager",
        ])
        .expect("valid")
        .expect("on");
        assert_eq!(am.format, Format::Alertmanager);
    }
}
