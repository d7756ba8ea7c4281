//! Command-line flags; every flag can also be set through its environment variable.

use std::net::SocketAddr;

use clap::Parser;
use jiff::SignedDuration;
pub use lifeguard_api::process::LogFormat;
use lifeguard_api::process::parse_duration;

use crate::plan::Settings;
use crate::rejection::{DEFAULT_REASONS, RejectionReasons};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "lifeguard-controller",
    version,
    about = "lifeguard's workspace controller"
)]
pub struct Config {
    /// Wait between a rejected pod being gone and its replacement, e.g. 15s.
    #[arg(long, env = "LIFEGUARD_BACKOFF", default_value = "15s", value_parser = parse_duration)]
    pub backoff: SignedDuration,
    /// Replacements of rejected pods per workspace before it is marked Failed.
    #[arg(long, env = "LIFEGUARD_MAX_RETRIES", default_value_t = 3)]
    pub max_retries: u32,
    /// How long a deleting pod may take to stop its containers before its disposal
    /// finalizer is released anyway.
    #[arg(long, env = "LIFEGUARD_DISPOSAL_TIMEOUT", default_value = "2m", value_parser = parse_duration)]
    pub disposal_timeout: SignedDuration,
    /// Kubelet rejection reasons (comma-separated; a trailing * matches a prefix).
    #[arg(long, env = "LIFEGUARD_REJECTION_REASONS", value_delimiter = ',', default_values_t = DEFAULT_REASONS.iter().map(|s| s.to_string()))]
    pub rejection_reasons: Vec<String>,
    /// How often pods holding our finalizer are swept for orphans and overdue deletions.
    #[arg(long, env = "LIFEGUARD_SWEEP_INTERVAL", default_value = "1m", value_parser = parse_duration)]
    pub sweep_interval: SignedDuration,
    /// Workspaces reconciled at the same time.
    #[arg(long, env = "LIFEGUARD_CONCURRENCY", default_value_t = 16)]
    pub concurrency: u16,
    /// Plain-HTTP address for /healthz, /readyz and /metrics.
    #[arg(
        long,
        env = "LIFEGUARD_CONTROLLER_METRICS_LISTEN",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_listen: SocketAddr,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "lifeguard-system")]
    pub lease_namespace: String,
    /// Name of the leader-election Lease; replicas sharing it never act at once.
    #[arg(
        long,
        env = "LIFEGUARD_LEASE_NAME",
        default_value = "lifeguard-controller"
    )]
    pub lease_name: String,
    /// Seconds a leader holds the Lease without renewing it before another may take over.
    #[arg(long, env = "LIFEGUARD_LEASE_SECONDS", default_value_t = 15)]
    pub lease_seconds: u64,
    /// This replica's identity in the Lease (default: POD_NAME, else host name and pid).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Wait after the API first refuses to create a workspace's pod (quota, admission
    /// webhook); it doubles with each refusal in a row.
    #[arg(long, env = "LIFEGUARD_CREATE_BACKOFF", default_value = "5s", value_parser = parse_duration)]
    pub create_backoff: SignedDuration,
    /// The longest wait between two refused pod creations.
    #[arg(long, env = "LIFEGUARD_CREATE_BACKOFF_MAX", default_value = "2m", value_parser = parse_duration)]
    pub create_backoff_max: SignedDuration,
    #[arg(long, env = "LIFEGUARD_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

impl Config {
    pub fn settings(&self) -> Settings {
        Settings {
            backoff: self.backoff,
            max_retries: self.max_retries,
            disposal_timeout: self.disposal_timeout,
            reasons: RejectionReasons::new(self.rejection_reasons.iter().cloned()),
            create_backoff: self.create_backoff,
            create_backoff_max: self.create_backoff_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_design() {
        let config = Config::try_parse_from(["lifeguard-controller"]).expect("defaults");
        let settings = config.settings();
        assert_eq!(settings.backoff, SignedDuration::from_secs(15));
        assert_eq!(settings.max_retries, 3);
        assert_eq!(
            (settings.create_backoff, settings.create_backoff_max),
            (SignedDuration::from_secs(5), SignedDuration::from_secs(120))
        );
        assert!(settings.reasons.matches("OutOfcpu"));
        let config = Config::try_parse_from([
            "lifeguard-controller",
            "--backoff=2s",
            "--rejection-reasons=NodeAffinity",
        ])
        .expect("flags");
        assert_eq!(config.settings().backoff, SignedDuration::from_secs(2));
        assert!(!config.settings().reasons.matches("OutOfcpu"));
        assert!(Config::try_parse_from(["lifeguard-controller", "--backoff=-1s"]).is_err());
    }
}
