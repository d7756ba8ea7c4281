//! The command line. Values that need the clock (times) are kept as text here and read
//! in the commands, so parsing stays deterministic.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::cluster::ClusterArgs;
use crate::output::Format;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  error (API server unreachable or refusing, window not found, invalid window, ...)
  2  usage error (unknown flag, bad flag value)
  3  `maintenance wait` timed out (what remains is printed on stderr)";

#[derive(Debug, Parser)]
#[command(
    name = "lifeguard",
    version,
    about = "Schedule maintenance windows, watch drains and list workspaces of lifeguard",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output format
    #[arg(short, long, global = true, value_enum, default_value = "table")]
    pub output: Format,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
// Parsed once per run: the size of the largest variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Maintenance windows: when no new workspace may start
    #[command(subcommand, visible_alias = "mw")]
    Maintenance(Maintenance),
    /// Workspaces and what happened to their pods
    #[command(subcommand, visible_alias = "ws")]
    Workspaces(Workspaces),
    /// Nodes: what the prober leaves on them
    #[command(subcommand)]
    Nodes(Nodes),
}

#[derive(Debug, Subcommand)]
pub enum Nodes {
    /// Remove the prober's LifeguardProbesHealthy condition and lifeguard.dev/unhealthy
    /// taint from every node: the last step of an uninstall, once no prober runs
    Clean,
}

#[derive(Debug, Subcommand)]
pub enum Maintenance {
    /// Create a one-off window that starts now
    Start(Start),
    /// End a window now (a one-off window's end is set to now; a recurring or not yet
    /// started window is suspended). The object stays, as a record
    Stop { name: String },
    /// Active, current end or next start, drain progress and message of windows
    Status {
        /// One window; all when left out
        name: Option<String>,
    },
    /// Upcoming occurrences of a window in the cluster or in a manifest file
    Next(Next),
    /// Wait until a draining window has stopped every workspace it covers
    #[command(after_help = EXIT_CODES)]
    Wait(Wait),
    /// Hold a drain: no new workspace is stopped (those being stopped finish); the
    /// window's other effects stay
    Pause { name: String },
    /// Let a paused drain go on
    Resume { name: String },
    /// Skip one occurrence of a recurring window: adds an exclusion covering exactly it
    /// (`maintenance next` then lists it as skipped)
    Skip(Skip),
    /// The namespaces, workspaces and nodes a window covers now, and its next
    /// occurrence, changing nothing: the blast radius before creating it
    Preview(Preview),
}

#[derive(Debug, Args)]
pub struct Preview {
    /// A window in the cluster
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub name: Option<String>,
    /// A MaintenanceWindow manifest (YAML or JSON; `-` for stdin), evaluated against the
    /// cluster's namespaces, workspaces and nodes
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Start {
    /// Window name (a DNS subdomain, e.g. node-upgrade-2026-12)
    pub name: String,
    /// How long the window lasts, e.g. 2h or 1h30m
    #[arg(long = "for", value_name = "DURATION", required_unless_present = "until", conflicts_with = "until", value_parser = crate::when::parse_for)]
    pub duration: Option<jiff::SignedDuration>,
    /// When the window ends: RFC 3339 (2026-12-01T22:00:00Z), local date and time
    /// (2026-12-01 22:00) or local time of day (22:00, the next one)
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// When the window opens, in the same forms as --until (default: now)
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// With --drain: tell the running workspaces it covers this long before the drain
    /// opens (a condition, an Event and an annotation on their pods), e.g. 15m
    #[arg(long, value_name = "DURATION", requires = "drain", value_parser = crate::when::parse_for)]
    pub notice: Option<jiff::SignedDuration>,
    /// Shown to whoever is denied during the window
    #[arg(long, short)]
    pub message: Option<String>,
    /// Also stop running workspaces the window covers
    #[arg(long)]
    pub drain: bool,
    /// Let the controller re-create rejected pods of existing workspaces during the window
    #[arg(long)]
    pub allow_recreation: bool,
    /// Cover only namespaces with these labels: k=v,k2=v2 (default: all)
    #[arg(long, value_name = "SELECTOR")]
    pub namespace_selector: Option<String>,
    /// Cover only workspaces with these labels: k=v,k2=v2 (default: all)
    #[arg(long, value_name = "SELECTOR")]
    pub workspace_selector: Option<String>,
    /// Cover only nodes with these labels: k=v,k2=v2. Covered workspaces are then kept
    /// off these nodes instead of being denied, and --drain stops only those on them
    #[arg(long, value_name = "SELECTOR")]
    pub node_selector: Option<String>,
    /// With --drain: stop at most this many workspaces at once, e.g. 2 or 25%
    #[arg(long, value_name = "N|PERCENT", requires = "drain")]
    pub max_concurrent: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["next", "on"])))]
pub struct Skip {
    /// Window name
    pub name: String,
    /// The occurrence in force now (it ends at once), or else the next one
    #[arg(long)]
    pub next: bool,
    /// The occurrence starting on this day in the window's time zone (2026-12-24), or the
    /// one in force at this RFC 3339 time
    #[arg(long, value_name = "DATE|TIME")]
    pub on: Option<String>,
    /// Why; shown in the window's status and by `maintenance next`
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Args)]
pub struct Next {
    /// A window in the cluster
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub name: Option<String>,
    /// A MaintenanceWindow manifest (YAML or JSON, several documents allowed; `-` for
    /// stdin); needs no cluster
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// How many occurrences
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub count: u16,
    /// Evaluate at this instant instead of now (same formats as `start --until`)
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
}

#[derive(Debug, Args)]
pub struct Wait {
    /// Window name
    pub name: String,
    /// Wait until no covered workspace is left running (the only condition so far)
    #[arg(long, required = true)]
    pub drained: bool,
    /// Only until this node of a node-scoped window is drained (its
    /// lifeguard.dev/drained label is true)
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// Give up after this long (exit code 3)
    #[arg(long, default_value = "10m", value_parser = parse_timeout)]
    pub timeout: Duration,
}

#[derive(Debug, Subcommand)]
pub enum Workspaces {
    /// Phase, node, pod re-creations and last kubelet rejection of workspaces
    #[command(visible_alias = "ls")]
    List {
        /// Namespace (default: the kubeconfig context's)
        #[arg(short, long, conflicts_with = "all_namespaces")]
        namespace: Option<String>,
        /// Every namespace
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
    /// Ask a draining window to stop a workspace later (annotation
    /// lifeguard.dev/postpone-drain), counted from the occurrence's start; the window grants
    /// at most its spec.maxPostpone
    Postpone(Postpone),
}

#[derive(Debug, Args)]
pub struct Postpone {
    /// The Workspace
    pub name: String,
    /// Namespace (default: the kubeconfig context's)
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// How long after the occurrence's start, for example 30m (at most 24h)
    #[arg(long = "for", value_name = "DURATION", required_unless_present = "cancel",
          conflicts_with = "cancel", value_parser = parse_postpone)]
    pub for_: Option<String>,
    /// Withdraw the request: the drain stops the workspace when it reaches it
    #[arg(long)]
    pub cancel: bool,
}

/// The same rule the webhook applies, so a bad value fails before any request.
fn parse_postpone(text: &str) -> Result<String, String> {
    lifeguard_api::postpone::check_request(text)?;
    Ok(text.trim().to_string())
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    let d = crate::when::parse_for(text)?;
    Duration::try_from(d).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_errors() {
        let cases: &[&[&str]] = &[
            &["maintenance", "start", "x"],
            &[
                "maintenance",
                "start",
                "x",
                "--for",
                "2h",
                "--until",
                "22:00",
            ],
            &["maintenance", "start", "x", "--for", "0s"],
            &["maintenance", "next"],
            &["maintenance", "next", "x", "-f", "w.yaml"],
            &["maintenance", "next", "x", "--count", "0"],
            &["maintenance", "wait", "x"],
            &[
                "maintenance",
                "wait",
                "x",
                "--drained",
                "--timeout",
                "never",
            ],
            &["workspaces", "list", "-n", "a", "-A"],
            &["workspaces", "postpone", "alice"],
            &["workspaces", "postpone", "alice", "--for", "2d"],
            &["workspaces", "postpone", "alice", "--for", "soon"],
            &[
                "workspaces",
                "postpone",
                "alice",
                "--for",
                "30m",
                "--cancel",
            ],
            &["maintenance", "status", "-o", "xml"],
        ];
        for args in cases {
            let argv = std::iter::once("lifeguard").chain(args.iter().copied());
            let error = Cli::try_parse_from(argv).expect_err(&args.join(" "));
            assert_eq!(error.exit_code(), 2, "{}", args.join(" "));
        }
    }

    #[test]
    fn flags_anywhere_like_kubectl() {
        let cli = Cli::try_parse_from([
            "lifeguard",
            "mw",
            "wait",
            "up",
            "--drained",
            "--timeout",
            "90s",
            "-o",
            "json",
            "--context",
            "prod",
        ])
        .expect("parses");
        assert_eq!(cli.output, Format::Json);
        assert_eq!(cli.cluster.context.as_deref(), Some("prod"));
        match cli.command {
            Command::Maintenance(Maintenance::Wait(w)) => {
                assert_eq!(w.timeout, Duration::from_secs(90))
            }
            other => panic!("{other:?}"),
        }
    }
}
