//! Command-line flags; every flag can also be set through its environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
pub use lifeguard_api::process::LogFormat;
use lifeguard_api::process::parse_interval;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "lifeguard-webhook",
    version,
    about = "lifeguard's admission webhook"
)]
pub struct Config {
    /// HTTPS address the API server calls (/validate, /mutate).
    #[arg(long, env = "LIFEGUARD_WEBHOOK_LISTEN", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// Plain-HTTP address for /healthz, /readyz and /metrics.
    #[arg(
        long,
        env = "LIFEGUARD_WEBHOOK_METRICS_LISTEN",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_listen: SocketAddr,
    /// Serving certificate (PEM chain); re-read when it changes.
    #[arg(
        long,
        env = "LIFEGUARD_WEBHOOK_TLS_CERT",
        default_value = "/etc/lifeguard/tls/tls.crt"
    )]
    pub tls_cert: PathBuf,
    /// Serving key (PEM); re-read when it changes.
    #[arg(
        long,
        env = "LIFEGUARD_WEBHOOK_TLS_KEY",
        default_value = "/etc/lifeguard/tls/tls.key"
    )]
    pub tls_key: PathBuf,
    /// How often the certificate files are checked for changes, e.g. `10s`.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_CERT_POLL", default_value = "10s", value_parser = parse_interval)]
    pub cert_poll_interval: Duration,
    /// Largest AdmissionReview body accepted; the API server caps objects at about 1.5 MiB
    /// and a review may carry the object twice.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_MAX_BODY_BYTES", default_value_t = 6 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Users allowed to re-create rejected workspace pods during an `allowRecreation`
    /// window (the controller's identity). Empty: any user, so restrict pod creation by RBAC.
    #[arg(
        long = "recreation-user",
        env = "LIFEGUARD_WEBHOOK_RECREATION_USERS",
        value_delimiter = ','
    )]
    pub recreation_users: Vec<String>,
    /// Log format.
    #[arg(long, env = "LIFEGUARD_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Bytes of admission bodies held in memory at once, across all requests; a request
    /// that finds no room within 2 s gets 503. Keep it well under the memory limit.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_MAX_BYTES_IN_FLIGHT", default_value_t = 16 * 1024 * 1024)]
    pub max_bytes_in_flight: usize,
    /// Open admission connections at most; further ones wait to be accepted.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_MAX_CONNECTIONS", default_value_t = 128)]
    pub max_connections: usize,
    /// Time a client has to send a request's headers (HTTP/1) and, separately, its body.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_READ_TIMEOUT", default_value = "10s", value_parser = parse_interval)]
    pub read_timeout: Duration,
    /// A connection that moves no bytes for this long is closed gracefully.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_interval)]
    pub idle_timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_have_sane_defaults() {
        let config = Config::try_parse_from(["lifeguard-webhook"]).expect("defaults parse");
        assert_eq!(config.listen.port(), 8443);
        assert_eq!(config.metrics_listen.port(), 8080);
        assert!(config.recreation_users.is_empty());
        assert_eq!(config.cert_poll_interval, Duration::from_secs(10));
        let config = Config::try_parse_from([
            "lifeguard-webhook",
            "--recreation-user=system:serviceaccount:lifeguard-system:lifeguard-controller",
        ])
        .expect("flag parses");
        assert_eq!(config.recreation_users.len(), 1);
    }
}
