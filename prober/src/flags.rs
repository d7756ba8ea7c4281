//! Command-line flags; every flag can also be set through its environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
pub use lifeguard_runtime::process::LogFormat;
use lifeguard_runtime::process::parse_interval;

use crate::mounts::StorageRule;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "lifeguard-prober",
    version,
    about = "lifeguard's per-node prober: throwaway volume and container checks"
)]
pub struct Config {
    /// The node this prober judges (downward API `spec.nodeName`).
    #[arg(long, env = "NODE_NAME")]
    pub node_name: String,
    /// Namespace of the throwaway pods: a dedicated one where nothing else lives, so the
    /// right to create pods there gives no ServiceAccount or Secret of anything else.
    #[arg(
        long,
        env = "LIFEGUARD_PROBER_PROBE_NAMESPACE",
        default_value = "lifeguard-probes"
    )]
    pub probe_namespace: String,
    /// The prober's own pod (downward API `metadata.name`): who reported the node Events.
    #[arg(long, env = "POD_NAME")]
    pub pod_name: Option<String>,
    /// The node's workspace storage (a hostPath) where the volume check writes.
    #[arg(
        long,
        env = "LIFEGUARD_PROBER_STORAGE_PATH",
        default_value = "/workspace-storage"
    )]
    pub storage_path: PathBuf,
    /// The storage path must be the root of a filesystem (the workspace disk), not a
    /// directory of another one (the node's root disk while the workspace disk is not
    /// mounted). Read from /proc/self/mountinfo on every volume run.
    #[arg(long, env = "LIFEGUARD_PROBER_STORAGE_MUST_BE_MOUNTPOINT",
          default_value_t = true, action = clap::ArgAction::Set)]
    pub storage_must_be_mountpoint: bool,
    /// The filesystem type the storage must have (as in mountinfo: ext4, xfs, nfs4, ...).
    #[arg(long, env = "LIFEGUARD_PROBER_STORAGE_FS_TYPE")]
    pub storage_fs_type: Option<String>,
    /// Plain-HTTP address for /healthz (cached verdict), /status, /readyz and /metrics.
    #[arg(long, env = "LIFEGUARD_PROBER_LISTEN", default_value = "0.0.0.0:8089")]
    pub listen: SocketAddr,
    /// Time between runs of each check (jittered by +-10 %).
    #[arg(long, env = "LIFEGUARD_PROBER_INTERVAL", default_value = "30s", value_parser = parse_interval)]
    pub interval: Duration,
    /// Time before a failed check runs again (default: a fifth of the interval), so that
    /// the failures that make a node unhealthy are confirmed within two intervals.
    #[arg(long, env = "LIFEGUARD_PROBER_RETRY_INTERVAL", value_parser = parse_interval)]
    pub retry_interval: Option<Duration>,
    /// Failures in a row of one check that make the node unhealthy.
    #[arg(long, env = "LIFEGUARD_PROBER_FAILURE_THRESHOLD", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub failure_threshold: u32,
    /// Deadline of the volume check; a run still going after it is a failure (hung I/O).
    #[arg(long, env = "LIFEGUARD_PROBER_VOLUME_DEADLINE", default_value = "10s", value_parser = parse_interval)]
    pub volume_deadline: Duration,
    /// Deadline of the container check: the throwaway pod must have succeeded by then.
    #[arg(long, env = "LIFEGUARD_PROBER_CONTAINER_DEADLINE", default_value = "45s", value_parser = parse_interval)]
    pub container_deadline: Duration,
    /// Lifetime of throwaway pods and directories; older ones are leftovers the janitor
    /// removes. Also the pods' activeDeadlineSeconds. Must exceed both deadlines.
    #[arg(long, env = "LIFEGUARD_PROBER_TTL", default_value = "2m", value_parser = parse_interval)]
    pub ttl: Duration,
    /// Image of the throwaway pod; it needs `sh`, `echo`, `cat` and `test`.
    #[arg(
        long,
        env = "LIFEGUARD_PROBER_PROBE_IMAGE",
        default_value = "busybox:1.36"
    )]
    pub probe_image: String,
    /// imagePullPolicy of the throwaway pod.
    #[arg(
        long,
        env = "LIFEGUARD_PROBER_PROBE_IMAGE_PULL_POLICY",
        default_value = "IfNotPresent"
    )]
    pub probe_image_pull_policy: String,
    /// Also taint the node `lifeguard.dev/unhealthy:NoSchedule` while it is unhealthy.
    #[arg(long, env = "LIFEGUARD_PROBER_TAINT")]
    pub taint: bool,
    /// No taint is added while more than this share of the Nodes (0 to 1) already carry
    /// it: a fleet-wide failure is not a node failure. 1 turns the guard off.
    #[arg(long, env = "LIFEGUARD_PROBER_MAX_TAINTED_SHARE",
          default_value_t = crate::fleet::DEFAULT_MAX_TAINTED_SHARE)]
    pub max_tainted_share: f64,
    /// How often the Node condition is rewritten when nothing changed.
    #[arg(long, env = "LIFEGUARD_PROBER_HEARTBEAT", default_value = "5m", value_parser = parse_interval)]
    pub heartbeat: Duration,
    #[arg(long, env = "LIFEGUARD_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Play the node's backup agent in the disposal handshake for workspace pods labelled
    /// `disposal-standin: "true"`, "saving" each for this long
    /// (`disposal_standin`). Off by default.
    #[arg(long, env = "LIFEGUARD_PROBER_DISPOSAL_STANDIN_SAVE_TIME", value_parser = parse_interval)]
    pub disposal_standin_save_time: Option<Duration>,
    /// How the stand-in answers: `receipt` (a DisposalReceipt; its ClusterRole
    /// `lifeguard-disposal-agent-receipts` writes no pod) or `annotation` (on the pod;
    /// `lifeguard-disposal-agent`, which may patch pods).
    #[arg(
        long,
        env = "LIFEGUARD_PROBER_DISPOSAL_STANDIN_ANSWER",
        value_enum,
        default_value = "receipt"
    )]
    pub disposal_standin_answer: crate::disposal_standin::AnswerBy,
}

impl Config {
    pub fn storage_rule(&self) -> StorageRule {
        StorageRule {
            must_be_mountpoint: self.storage_must_be_mountpoint,
            fs_type: self.storage_fs_type.clone().filter(|t| !t.is_empty()),
        }
    }

    pub fn retry(&self) -> Duration {
        self.retry_interval.unwrap_or(self.interval / 5)
    }

    /// Settings that cannot work together, in words.
    pub fn validate(&self) -> Result<(), String> {
        if self.ttl <= self.container_deadline || self.ttl <= self.volume_deadline {
            return Err(format!(
                "--ttl ({:?}) must be longer than both deadlines ({:?}, {:?}), or live checks would be reaped",
                self.ttl, self.volume_deadline, self.container_deadline
            ));
        }
        if !["Always", "IfNotPresent", "Never"].contains(&self.probe_image_pull_policy.as_str()) {
            return Err(format!(
                "--probe-image-pull-policy {:?} is not Always, IfNotPresent or Never",
                self.probe_image_pull_policy
            ));
        }
        if !(0.0..=1.0).contains(&self.max_tainted_share) {
            return Err(format!(
                "--max-tainted-share {} is not a share between 0 and 1",
                self.max_tainted_share
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_design() {
        let config =
            Config::try_parse_from(["lifeguard-prober", "--node-name=n1"]).expect("defaults parse");
        assert_eq!(config.interval, Duration::from_secs(30));
        assert_eq!(config.retry(), Duration::from_secs(6));
        assert_eq!(config.failure_threshold, 3);
        assert!(!config.taint);
        assert_eq!(config.max_tainted_share, 0.5);
        assert_eq!(config.probe_namespace, "lifeguard-probes");
        assert_eq!(
            config.storage_rule(),
            StorageRule {
                must_be_mountpoint: true,
                fs_type: None
            },
            "the storage must be a mount point unless told otherwise"
        );
        let relaxed = Config::try_parse_from([
            "lifeguard-prober",
            "--node-name=n1",
            "--storage-must-be-mountpoint=false",
            "--storage-fs-type=xfs",
        ])
        .expect("parses");
        assert_eq!(
            relaxed.storage_rule(),
            StorageRule {
                must_be_mountpoint: false,
                fs_type: Some("xfs".into())
            }
        );
        assert_eq!(config.validate(), Ok(()));
        assert!(
            Config::try_parse_from(["lifeguard-prober"]).is_err(),
            "node is required"
        );
        assert!(
            Config::try_parse_from([
                "lifeguard-prober",
                "--node-name=n1",
                "--failure-threshold=0"
            ])
            .is_err()
        );
    }

    #[test]
    fn a_ttl_shorter_than_a_deadline_is_refused() {
        let config = Config::try_parse_from([
            "lifeguard-prober",
            "--node-name=n1",
            "--ttl=30s",
            "--container-deadline=45s",
        ])
        .expect("parses");
        assert!(config.validate().unwrap_err().contains("--ttl"));
        let config = Config::try_parse_from([
            "lifeguard-prober",
            "--node-name=n1",
            "--probe-image-pull-policy=Sometimes",
        ])
        .expect("parses");
        assert!(config.validate().is_err());
        for share in ["1.5", "-0.1", "NaN"] {
            let config = Config::try_parse_from([
                "lifeguard-prober",
                "--node-name=n1",
                &format!("--max-tainted-share={share}"),
            ])
            .expect("parses");
            let error = config.validate().expect_err(share);
            assert!(error.contains("--max-tainted-share"), "{error}");
        }
    }
}
