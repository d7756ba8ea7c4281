//! Command-line flags; every flag can also be set through its environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
pub use lifeguard_runtime::process::LogFormat;
use lifeguard_runtime::process::parse_interval;

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
    /// Generate and renew the serving certificate, keep it in `--tls-secret`, and write
    /// its CA into `--webhook-configuration`s (instead of reading `--tls-cert`/`--tls-key`).
    /// The env value is read as a boolean ("true"/"false"), so the cert-manager
    /// component can turn off what the default install turns on.
    #[arg(
        long,
        env = "LIFEGUARD_WEBHOOK_MANAGE_CERTIFICATE",
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new(),
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub manage_certificate: bool,
    /// Secret holding the managed certificate (`tls.crt`, `tls.key`, `ca.crt`, `ca.key`).
    #[arg(
        long,
        env = "LIFEGUARD_WEBHOOK_TLS_SECRET",
        default_value = "lifeguard-webhook-tls"
    )]
    pub tls_secret: String,
    /// Service the API server calls; the certificate's SANs are its DNS names.
    #[arg(
        long,
        env = "LIFEGUARD_WEBHOOK_SERVICE_NAME",
        default_value = "lifeguard-webhook"
    )]
    pub service_name: String,
    /// Namespace of the Secret and the Service (the downward API gives the pod's own).
    #[arg(long, env = "POD_NAMESPACE", default_value = "lifeguard-system")]
    pub namespace: String,
    /// lifeguard's own webhook configurations (validating or mutating) whose `caBundle` is
    /// kept; no other configuration is ever written.
    #[arg(
        long = "webhook-configuration",
        env = "LIFEGUARD_WEBHOOK_CONFIGURATIONS",
        value_delimiter = ',',
        default_value = "lifeguard-validate,lifeguard-mutate"
    )]
    pub webhook_configurations: Vec<String>,
    /// Lifetime of a managed serving certificate (the CA gets ten times as long); renewed
    /// when less than a third is left. Hours at most as unit, e.g. `8760h`.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_CERTIFICATE_VALIDITY", default_value = "8760h", value_parser = parse_interval)]
    pub certificate_validity: Duration,
    /// How often the managed certificate, the Secret and the caBundles are checked.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_CERTIFICATE_CHECK_INTERVAL", default_value = "1m", value_parser = parse_interval)]
    pub certificate_check_interval: Duration,
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
    /// How long after the first eviction of a workspace pod its evictions are answered 429
    /// while lifeguard saves the workspace; after it the pod is evicted as asked, so no
    /// drain waits forever. Shorter than the shortest drain timeout in use (EKS managed node
    /// groups force after 15 minutes; docs/operations.md).
    #[arg(long, env = "LIFEGUARD_WEBHOOK_EVICTION_MAX_WAIT", default_value = "10m", value_parser = parse_interval)]
    pub eviction_max_wait: Duration,
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
    /// Time a client has to send a request's body. (HTTP/1 headers get `--idle-timeout`:
    /// hyper starts their timer when the previous exchange ends, so it is also the idle
    /// limit of a kept-alive connection.)
    #[arg(long, env = "LIFEGUARD_WEBHOOK_READ_TIMEOUT", default_value = "10s", value_parser = parse_interval)]
    pub read_timeout: Duration,
    /// A connection that moves no bytes for this long is closed gracefully. Longer than
    /// the API server's own idle limit for webhook connections (`API_SERVER_IDLE`), so the
    /// API server closes an idle connection first: a close from this side can cross a
    /// request the API server is sending on it, which then fails with EOF.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_IDLE_TIMEOUT", default_value = "150s", value_parser = parse_interval)]
    pub idle_timeout: Duration,
    /// After SIGTERM, keep serving this long before closing connections: a deleted pod
    /// leaves the Service's endpoints within a moment, but until kube-proxy (or the API
    /// server's own connection pool) has noticed, new calls still arrive here, and with
    /// `failurePolicy: Fail` a refused connection is a refused admission.
    #[arg(long, env = "LIFEGUARD_WEBHOOK_SHUTDOWN_DELAY", default_value = "5s", value_parser = parse_interval)]
    pub shutdown_delay: Duration,
}

/// How long the API server keeps an idle connection to a webhook: client-go's transports
/// take `IdleConnTimeout` from Go's default transport (90 s), for HTTP/1.1 and HTTP/2.
pub const API_SERVER_IDLE: Duration = Duration::from_secs(90);

/// After `--shutdown-delay`, how long a stopping webhook waits for its connections to end.
/// The webhook does not close an idle HTTP/1 connection itself (that close can cross a
/// POST, `conn::serve_tls`), so this outlasts the API server's own idle close. The
/// Deployment's `terminationGracePeriodSeconds` covers the delay plus this.
pub const STOP_GRACE: Duration = Duration::from_secs(API_SERVER_IDLE.as_secs() + 10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_server_closes_idle_connections_before_the_webhook_does() {
        let config = Config::try_parse_from(["lifeguard-webhook"]).expect("defaults parse");
        assert!(
            config.idle_timeout >= API_SERVER_IDLE + Duration::from_secs(30),
            "{:?}",
            config.idle_timeout
        );
    }

    #[test]
    fn a_stopping_webhook_waits_out_the_api_servers_idle_connections() {
        assert!(STOP_GRACE > API_SERVER_IDLE, "{STOP_GRACE:?}");
    }

    #[test]
    fn flags_have_sane_defaults() {
        let config = Config::try_parse_from(["lifeguard-webhook"]).expect("defaults parse");
        assert_eq!(config.listen.port(), 8443);
        assert_eq!(config.metrics_listen.port(), 8080);
        assert!(config.recreation_users.is_empty());
        assert_eq!(config.cert_poll_interval, Duration::from_secs(10));
        assert_eq!(config.shutdown_delay, Duration::from_secs(5));
        assert!(!config.manage_certificate, "file mode unless asked");
        assert_eq!(config.tls_secret, "lifeguard-webhook-tls");
        assert_eq!(config.service_name, "lifeguard-webhook");
        assert_eq!(
            config.webhook_configurations,
            ["lifeguard-validate", "lifeguard-mutate"]
        );
        assert_eq!(
            config.certificate_validity,
            Duration::from_secs(365 * 86_400)
        );
        assert_eq!(config.certificate_check_interval, Duration::from_secs(60));
        let config = Config::try_parse_from([
            "lifeguard-webhook",
            "--recreation-user=system:serviceaccount:lifeguard-system:lifeguard-controller",
        ])
        .expect("flag parses");
        assert_eq!(config.recreation_users.len(), 1);
    }

    #[test]
    fn managed_certificate_flags_parse() {
        let config = Config::try_parse_from([
            "lifeguard-webhook",
            "--manage-certificate",
            "--namespace=ops",
            "--webhook-configuration=a,b",
            "--webhook-configuration=c",
            "--certificate-validity=24h",
            "--certificate-check-interval=10s",
        ])
        .expect("flags parse");
        assert!(config.manage_certificate);
        assert_eq!(config.namespace, "ops");
        assert_eq!(config.webhook_configurations, ["a", "b", "c"]);
        assert_eq!(config.certificate_validity, Duration::from_secs(86_400));
        assert_eq!(config.certificate_check_interval, Duration::from_secs(10));
        let zero = Config::try_parse_from(["lifeguard-webhook", "--certificate-validity=0s"]);
        assert!(zero.is_err(), "a zero validity is refused");
    }

    /// The install sets `LIFEGUARD_WEBHOOK_MANAGE_CERTIFICATE` to "true" and the
    /// cert-manager component sets it to "false": both must be honoured. Each case reads
    /// its own variable name (the argument's env renamed) so parallel tests never race.
    #[test]
    fn manage_certificate_env_accepts_true_and_false() {
        use clap::{CommandFactory, FromArgMatches};
        for (var, value, expected) in [
            ("LIFEGUARD_TEST_MANAGE_CERTIFICATE_TRUE", "true", true),
            ("LIFEGUARD_TEST_MANAGE_CERTIFICATE_FALSE", "false", false),
        ] {
            // SAFETY: the variable name is unique to this test case; nothing else reads it.
            unsafe { std::env::set_var(var, value) };
            let matches = Config::command()
                .mut_arg("manage_certificate", |arg| arg.env(var))
                .try_get_matches_from(["lifeguard-webhook"])
                .expect("env value parses");
            let config = Config::from_arg_matches(&matches).expect("config builds");
            assert_eq!(config.manage_certificate, expected, "{var}={value}");
        }
        for (flag, expected) in [
            ("--manage-certificate=true", true),
            ("--manage-certificate=false", false),
        ] {
            let config = Config::try_parse_from(["lifeguard-webhook", flag]).expect("flag parses");
            assert_eq!(config.manage_certificate, expected, "{flag}");
        }
    }
}
