//! Command-line flags; every flag can also be set through its environment variable.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use jiff::SignedDuration;
use lifeguard_api::rejection::{Classifier, ClassifierError};
pub use lifeguard_runtime::process::LogFormat;
use lifeguard_runtime::process::parse_duration;

use crate::notify::retry::Policy;
use crate::notify::settings::{Format, Settings as NotifySettings, Target};
use crate::settings::Settings;
use crate::workspace::namespace_policy::NamespacePolicy;
use crate::workspace::service_account_policy::ServiceAccountPolicy;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "lifeguard-controller",
    version,
    about = "lifeguard's workspace controller"
)]
pub struct Config {
    /// Wait between a rejected pod being gone and its first replacement, e.g. 15s; each
    /// further replacement of the same workspace waits twice as long, up to --backoff-max.
    #[arg(long, env = "LIFEGUARD_BACKOFF", default_value = "15s", value_parser = parse_duration)]
    pub backoff: SignedDuration,
    /// The longest wait before a replacement (the exponential backoff's cap).
    #[arg(long, env = "LIFEGUARD_BACKOFF_MAX", default_value = "5m", value_parser = parse_duration)]
    pub backoff_max: SignedDuration,
    /// Replacements of rejected pods per workspace before it is marked Failed.
    #[arg(long, env = "LIFEGUARD_MAX_RETRIES", default_value_t = 3)]
    pub max_retries: u32,
    /// How long a deleting pod may take to stop its containers before its disposal
    /// finalizer is released anyway.
    #[arg(long, env = "LIFEGUARD_DISPOSAL_TIMEOUT", default_value = "2m", value_parser = parse_duration)]
    pub disposal_timeout: SignedDuration,
    /// How long a workspace's node may be not Ready (its kubelet silent, or reporting
    /// NotReady) before the Workspace says `NodeLost` with a Warning Event. Kubernetes
    /// itself marks a silent node after its grace period (40 s by default), so the total
    /// is that plus this.
    #[arg(long, env = "LIFEGUARD_NODE_LOST_AFTER", default_value = "1m", value_parser = parse_duration)]
    pub node_lost_after: SignedDuration,
    /// Keep each stopped workspace pod until the node's backup agent confirms its work is
    /// saved (the `lifeguard.dev/disposal-result` annotation), unless the Workspace says
    /// otherwise in `spec.confirmDisposal`.
    #[arg(long, env = "LIFEGUARD_CONFIRM_DISPOSAL", default_value_t = false)]
    pub confirm_disposal: bool,
    /// How long after a pod's containers stopped its release waits for the backup agent's
    /// answer (counted from the deletion time, or from the kubelet's later report of the
    /// stop; from `--disposal-timeout` after the deletion while a container still runs); then
    /// it is released anyway, with a Warning Event, `DisposalConfirmed=False`
    /// and `lifeguard_controller_disposals_unconfirmed_total`.
    #[arg(long, env = "LIFEGUARD_DISPOSAL_CONFIRM_TIMEOUT", default_value = "10m", value_parser = parse_duration)]
    pub disposal_confirm_timeout: SignedDuration,
    /// Kubelet rejection reasons to treat as transient (re-create), in addition to the
    /// built-in catalogue and overriding it (comma-separated; a trailing * matches a prefix).
    #[arg(
        long,
        env = "LIFEGUARD_TRANSIENT_REJECTION_REASONS",
        value_delimiter = ','
    )]
    pub transient_rejection_reasons: Vec<String>,
    /// Kubelet rejection reasons to treat as permanent (the workspace fails at once), in
    /// addition to the built-in catalogue and overriding it.
    #[arg(
        long,
        env = "LIFEGUARD_PERMANENT_REJECTION_REASONS",
        value_delimiter = ','
    )]
    pub permanent_rejection_reasons: Vec<String>,
    /// Give a replacement pod a preferred node anti-affinity against the node whose kubelet
    /// refused its predecessor (not when the template pins spec.nodeName).
    #[arg(long, env = "LIFEGUARD_AVOID_REFUSING_NODE", default_value_t = true, action = clap::ArgAction::Set)]
    pub avoid_refusing_node: bool,
    /// Namespaces whose Workspaces never get a pod (Failed, reason NamespaceRefused), in
    /// addition to kube-system and this controller's own namespace, which are always
    /// refused (comma-separated).
    #[arg(long, env = "LIFEGUARD_REFUSE_NAMESPACES", value_delimiter = ',')]
    pub refuse_namespace: Vec<String>,
    /// The only ServiceAccounts a workspace pod may run as (names, comma-separated; `default`
    /// is the one a pod without `serviceAccountName` gets). Others are refused: the
    /// Workspace fails with reason ServiceAccountRefused and gets no pod. Unset: any.
    #[arg(long, env = "LIFEGUARD_ALLOW_SERVICE_ACCOUNTS", value_delimiter = ',')]
    pub allow_service_account: Vec<String>,
    /// How often pods holding our finalizer are swept for orphans and overdue deletions.
    #[arg(long, env = "LIFEGUARD_SWEEP_INTERVAL", default_value = "1m", value_parser = parse_duration)]
    pub sweep_interval: SignedDuration,
    /// Workspaces reconciled at the same time.
    #[arg(long, env = "LIFEGUARD_CONCURRENCY", default_value_t = lifeguard_api::names::CONTROLLER_DEFAULT_CONCURRENCY)]
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
    /// How long a workspace pod may take to be Ready when its Workspace's
    /// spec.startTimeout does not say (at most 24h). Past it the workspace fails, or its pod
    /// is re-created on another node when the node is at fault.
    #[arg(long, env = "LIFEGUARD_START_TIMEOUT", default_value = "10m", value_parser = parse_duration)]
    pub start_timeout: SignedDuration,
    /// How long past its grace period a released workspace pod with no running container
    /// may stay Terminating before the controller deletes it without grace.
    #[arg(long, env = "LIFEGUARD_STUCK_TERMINATING_AFTER", default_value = "1m", value_parser = parse_duration)]
    pub stuck_terminating_after: SignedDuration,
    /// The longest grace period (`terminationGracePeriodSeconds`) a workspace pod gets,
    /// whatever its template says (at most 1h): how long one stop can hold a drain's
    /// budget slot before the disposal timeouts even start.
    #[arg(long, env = "LIFEGUARD_MAX_GRACE_PERIOD", default_value = "5m", value_parser = parse_duration)]
    pub max_grace_period: SignedDuration,
    /// Evicted workspace pods (kubectl drain, node upgrades, autoscalers) stopped at once
    /// per node, disposal included: at most this many backup-agent saves per node; the
    /// other evictions are answered 429 until a slot is free.
    #[arg(long, env = "LIFEGUARD_EVICTION_MAX_PER_NODE", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub eviction_max_per_node: u32,
    /// Evicted workspace pods stopped at once in the whole cluster, notice and disposal
    /// included (0: no limit): at most this many saves at once against shared backup
    /// storage when many nodes drain together; the other evictions are answered 429 until
    /// a slot is free.
    #[arg(long, env = "LIFEGUARD_EVICTION_MAX_CONCURRENT", default_value_t = 10)]
    pub eviction_max_concurrent: u32,
    /// How long an evicted workspace is told of its stop (pod annotation
    /// lifeguard.dev/eviction-notice, an Event, a notification) before its pod is deleted;
    /// 0s stops it at once. At most 2m: the stop it delays must still end before the
    /// webhook's --eviction-max-wait (10m) lets the eviction through.
    #[arg(long, env = "LIFEGUARD_EVICTION_NOTICE", default_value = "0s", value_parser = parse_duration)]
    pub eviction_notice: SignedDuration,
    #[arg(long, env = "LIFEGUARD_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Prometheus that drain gates (`spec.holdWhile.prometheus`) ask, http://host:port[/prefix].
    /// Off by default: a window's Prometheus gate then cannot be evaluated and holds its
    /// drain (within its maxHold).
    #[arg(long, env = "LIFEGUARD_PROMETHEUS_URL")]
    pub prometheus_url: Option<String>,
    /// The namespaces a window's pods gate (`spec.holdWhile.pods`) looks in, as a label
    /// selector on Namespaces, e.g. `lifeguard.dev/backups=true`: the administrator's, since
    /// a tenant who could run a matching pod could hold any drain. Unset: the pods gate
    /// cannot be evaluated and holds the drain (within its maxHold).
    #[arg(long, env = "LIFEGUARD_PODS_GATE_NAMESPACES")]
    pub pods_gate_namespaces: Option<String>,
    /// Where notifications go (`http://` or `https://` with the system's CA roots): a JSON
    /// document per window start and end, notice and drain stop (docs/operations.md,
    /// "Notifications"). Off by default.
    #[arg(long, env = "LIFEGUARD_NOTIFY_URL")]
    pub notify_url: Option<String>,
    /// The body posted: the document (`json`) or an Alertmanager `/api/v2/alerts` array.
    #[arg(
        long,
        env = "LIFEGUARD_NOTIFY_FORMAT",
        value_enum,
        default_value = "json"
    )]
    pub notify_format: Format,
    /// A file holding a bearer token sent with each notification (a mounted Secret's key);
    /// read before each attempt, never logged.
    #[arg(long, env = "LIFEGUARD_NOTIFY_TOKEN_FILE")]
    pub notify_token_file: Option<std::path::PathBuf>,
    /// The deadline of one notification attempt, connection and answer included (at most 1m).
    #[arg(long, env = "LIFEGUARD_NOTIFY_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub notify_timeout: SignedDuration,
    /// Notifications waiting to be sent, at most; more are dropped and counted.
    #[arg(long, env = "LIFEGUARD_NOTIFY_QUEUE", default_value_t = 1000)]
    pub notify_queue: usize,
    /// The longest wait between two attempts while the receiver fails (from 1s, doubling).
    #[arg(long, env = "LIFEGUARD_NOTIFY_BACKOFF_MAX", default_value = "1m", value_parser = parse_duration)]
    pub notify_backoff_max: SignedDuration,
    /// A notification not delivered this long after it was queued is dropped and counted.
    #[arg(long, env = "LIFEGUARD_NOTIFY_GIVE_UP_AFTER", default_value = "30m", value_parser = parse_duration)]
    pub notify_give_up_after: SignedDuration,
    /// A name for this cluster, put into every notification (`cluster`).
    #[arg(long, env = "LIFEGUARD_NOTIFY_CLUSTER")]
    pub notify_cluster: Option<String>,
}

/// `key=value[,key=value...]` as a selector that matches labels holding all of them.
fn label_equalities(text: &str) -> Result<kube::core::Selector, String> {
    text.split(',')
        .map(|pair| match pair.trim().split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_string(), value.trim().to_string()))
            }
            _ => Err(format!(
                "{pair:?} is not key=value (a comma-separated list of label equalities, e.g. lifeguard.dev/backups=true)"
            )),
        })
        .collect()
}

/// The highest `--max-grace-period`: a stop held longer than an hour is a stuck drain.
const MAX_GRACE_PERIOD: SignedDuration = SignedDuration::from_hours(1);

/// The longest `--eviction-notice`: the notice, the pod's grace period and the disposal
/// handshake all run inside the webhook's `--eviction-max-wait` (10m by default), after
/// which the eviction goes through whatever lifeguard's progress; a notice of at most a
/// fifth of it leaves the save most of that time.
const MAX_EVICTION_NOTICE: SignedDuration = SignedDuration::from_mins(2);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("--backoff-max ({max:#}) must not be shorter than --backoff ({base:#})")]
    BackoffMax {
        base: SignedDuration,
        max: SignedDuration,
    },
    #[error(transparent)]
    Reasons(#[from] ClassifierError),
    #[error("--start-timeout ({0:#}) must be longer than zero and at most 24h")]
    StartTimeout(SignedDuration),
    #[error("--stuck-terminating-after ({0:#}) must not be negative")]
    StuckTerminatingAfter(SignedDuration),
    #[error("--max-grace-period ({0:#}) must be between 0s and 1h")]
    MaxGracePeriod(SignedDuration),
    #[error("--pods-gate-namespaces: {0}")]
    PodsGateNamespaces(String),
    #[error(
        "--eviction-notice ({0:#}) must be between 0s and 2m: the stop it delays must end \
         before the webhook's --eviction-max-wait (10m by default) lets the eviction through"
    )]
    EvictionNotice(SignedDuration),
}

impl Config {
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        if self.backoff_max < self.backoff {
            return Err(ConfigError::BackoffMax {
                base: self.backoff,
                max: self.backoff_max,
            });
        }
        if self.start_timeout <= SignedDuration::ZERO
            || self.start_timeout > lifeguard_api::validation::MAX_START_TIMEOUT
        {
            return Err(ConfigError::StartTimeout(self.start_timeout));
        }
        if self.stuck_terminating_after.is_negative() {
            return Err(ConfigError::StuckTerminatingAfter(
                self.stuck_terminating_after,
            ));
        }
        if self.max_grace_period.is_negative() || self.max_grace_period > MAX_GRACE_PERIOD {
            return Err(ConfigError::MaxGracePeriod(self.max_grace_period));
        }
        if self.eviction_notice.is_negative() || self.eviction_notice > MAX_EVICTION_NOTICE {
            return Err(ConfigError::EvictionNotice(self.eviction_notice));
        }
        let pods_gate_namespaces = match self.pods_gate_namespaces.as_deref() {
            None => None,
            Some(text) => Some(label_equalities(text).map_err(ConfigError::PodsGateNamespaces)?),
        };
        Ok(Settings {
            pods_gate_namespaces,
            max_grace_period: self.max_grace_period,
            eviction_max_per_node: self.eviction_max_per_node,
            eviction_max_concurrent: self.eviction_max_concurrent,
            eviction_notice: self.eviction_notice,
            start_timeout: self.start_timeout,
            stuck_terminating_after: self.stuck_terminating_after,
            backoff: self.backoff,
            backoff_max: self.backoff_max,
            max_retries: self.max_retries,
            disposal_timeout: self.disposal_timeout,
            node_lost_after: self.node_lost_after,
            confirm_disposal: self.confirm_disposal,
            disposal_confirm_timeout: self.disposal_confirm_timeout,
            reasons: Classifier::new(
                self.transient_rejection_reasons.iter().cloned(),
                self.permanent_rejection_reasons.iter().cloned(),
            )?,
            avoid_refusing_node: self.avoid_refusing_node,
            create_backoff: self.create_backoff,
            create_backoff_max: self.create_backoff_max,
            namespaces: NamespacePolicy::new(
                &self.lease_namespace,
                self.refuse_namespace.iter().cloned(),
            ),
            service_accounts: ServiceAccountPolicy::new(self.allow_service_account.iter().cloned()),
        })
    }
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

impl Config {
    /// The notification settings, checked; `None` without `--notify-url`: notifications
    /// are off.
    pub fn notify_settings(&self) -> Result<Option<NotifySettings>, String> {
        let config = self;
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
        Ok(Some(NotifySettings {
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

    use lifeguard_api::rejection::RejectionClass;

    fn settings(args: &[&str]) -> Result<Settings, ConfigError> {
        let argv = std::iter::once("lifeguard-controller").chain(args.iter().copied());
        Config::try_parse_from(argv)
            .expect("flags parse")
            .settings()
    }

    #[test]
    fn defaults_follow_the_design() {
        let settings = settings(&[]).expect("defaults");
        assert_eq!(settings.backoff, SignedDuration::from_secs(15));
        assert_eq!(settings.backoff_max, SignedDuration::from_mins(5));
        assert_eq!(settings.max_retries, 3);
        assert!(settings.avoid_refusing_node);
        assert_eq!(settings.reasons, Classifier::default());
        assert_eq!(
            (settings.create_backoff, settings.create_backoff_max),
            (SignedDuration::from_secs(5), SignedDuration::from_secs(120))
        );
        assert!(Config::try_parse_from(["lifeguard-controller", "--backoff=-1s"]).is_err());
        assert_eq!(
            (settings.start_timeout, settings.stuck_terminating_after),
            (SignedDuration::from_mins(10), SignedDuration::from_mins(1))
        );
    }

    #[test]
    fn flags_change_backoff_classes_and_node_avoidance() {
        let settings = settings(&[
            "--backoff=2s",
            "--backoff-max=1m",
            "--transient-rejection-reasons=SysctlForbidden,VendorBusy",
            "--permanent-rejection-reasons=NodeAffinity",
            "--avoid-refusing-node=false",
        ])
        .expect("flags");
        assert_eq!(settings.backoff, SignedDuration::from_secs(2));
        assert_eq!(settings.backoff_max, SignedDuration::from_mins(1));
        assert!(!settings.avoid_refusing_node);
        let class = |r| settings.reasons.classify(r).class;
        assert_eq!(class("SysctlForbidden"), RejectionClass::Transient);
        assert_eq!(class("NodeAffinity"), RejectionClass::Permanent);
        assert_eq!(class("AppArmor"), RejectionClass::Permanent);
        assert_eq!(class("OutOfcpu"), RejectionClass::Transient);
    }

    #[test]
    fn contradictory_flags_are_refused_with_a_clear_error() {
        let err = settings(&["--backoff=1m", "--backoff-max=30s"]).expect_err("cap below base");
        assert_eq!(
            err.to_string(),
            "--backoff-max (30s) must not be shorter than --backoff (1m)"
        );
        let err = settings(&[
            "--transient-rejection-reasons=NodePorts",
            "--permanent-rejection-reasons=NodePorts",
        ])
        .expect_err("both classes");
        assert!(err.to_string().contains("\"NodePorts\""), "{err}");
    }

    #[test]
    fn start_timeout_and_stuck_bound_are_checked() {
        let err = settings(&["--start-timeout=25h"]).expect_err("over a day");
        assert_eq!(
            err.to_string(),
            "--start-timeout (25h) must be longer than zero and at most 24h"
        );
        assert!(settings(&["--start-timeout=0s"]).is_err());
        let ok = settings(&["--start-timeout=3m", "--stuck-terminating-after=0s"]).expect("ok");
        assert_eq!(ok.start_timeout, SignedDuration::from_mins(3));
        assert_eq!(ok.stuck_terminating_after, SignedDuration::ZERO);
        assert_eq!(
            settings(&[]).map(|s| s.max_grace_period),
            Ok(SignedDuration::from_mins(5))
        );
        let err = settings(&["--max-grace-period=2h"]).expect_err("over an hour");
        assert_eq!(
            err.to_string(),
            "--max-grace-period (2h) must be between 0s and 1h"
        );
        let ok = settings(&["--max-grace-period=0s"]).expect("zero: stops without grace");
        assert_eq!(ok.max_grace_period, SignedDuration::ZERO);
        let ok = settings(&["--pods-gate-namespaces=lifeguard.dev/backups=true"]).expect("ok");
        assert!(ok.pods_gate_namespaces.is_some());
    }

    #[test]
    fn the_eviction_notice_stays_well_inside_the_webhooks_maximum_wait() {
        let cases = [
            (&[][..], Ok((SignedDuration::ZERO, 10))),
            (
                &["--eviction-notice=30s"][..],
                Ok((SignedDuration::from_secs(30), 10)),
            ),
            (
                &["--eviction-notice=2m", "--eviction-max-concurrent=0"][..],
                Ok((SignedDuration::from_mins(2), 0)),
            ),
            (
                &["--eviction-notice=3m"][..],
                Err(
                    "--eviction-notice (3m) must be between 0s and 2m: the stop it delays must end \
                     before the webhook's --eviction-max-wait (10m by default) lets the eviction through",
                ),
            ),
        ];
        for (args, want) in cases {
            let got = settings(args)
                .map(|s| (s.eviction_notice, s.eviction_max_concurrent))
                .map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "{args:?}");
        }
        let err = Config::try_parse_from(["lifeguard-controller", "--eviction-notice=-5s"])
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("must not be negative")),
            "{err:?}"
        );
        let ok = settings(&["--pods-gate-namespaces=lifeguard.dev/backups=true"]).expect("ok");
        assert!(ok.pods_gate_namespaces.is_some());
        assert!(settings(&[]).is_ok_and(|s| s.pods_gate_namespaces.is_none()));
        let err = settings(&["--pods-gate-namespaces=backups"]).expect_err("bad selector");
        assert!(
            err.to_string().starts_with("--pods-gate-namespaces: "),
            "{err}"
        );
    }

    fn notify_settings(args: &[&str]) -> Result<Option<NotifySettings>, String> {
        let argv = std::iter::once("lifeguard-controller").chain(args.iter().copied());
        Config::try_parse_from(argv)
            .expect("flags parse")
            .notify_settings()
    }

    #[test]
    fn off_by_default_and_flags_are_bounded() {
        assert!(notify_settings(&[]).expect("defaults").is_none());
        let on = notify_settings(&["--notify-url=http://r:1/", "--notify-cluster=eu-1"])
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
            let err = notify_settings(&["--notify-url=http://r:1/", flag]).expect_err(flag);
            assert_eq!(err, want, "{flag}");
        }
        let am = notify_settings(&[
            "--notify-url=http://am:9093/api/v2/alerts",
            "--notify-format=alertmanager",
        ])
        .expect("valid")
        .expect("on");
        assert_eq!(am.format, Format::Alertmanager);
    }
}
