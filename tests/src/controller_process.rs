//! The controller process that `local-up` started, seen from a test that must stop it,
//! kill it or start it again exactly as it was (same binary, arguments and environment).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, bail};

const STATE: &str = "/var/lib/lifeguard-cluster";
pub const CONTROLLER_PID_FILE: &str = "/run/lifeguard-cluster/lifeguard-controller.pid";

/// The controller binary the local run uses (release build in the shared target dir).
pub fn controller_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    target.join("release/lifeguard-controller")
}

/// A controller with the local run's kubeconfig (its own least-privilege identity) and
/// `args`, logging to `logs/e2e-<log_name>.log`.
pub fn spawn_controller(log_name: &str, args: &[String]) -> anyhow::Result<Child> {
    let log = std::fs::File::create(format!("{STATE}/logs/e2e-{log_name}.log"))?;
    Command::new(controller_binary())
        .env(
            "KUBECONFIG",
            format!("{STATE}/lifeguard-controller.kubeconfig"),
        )
        .args(args)
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()
        .with_context(|| format!("starting {}", controller_binary().display()))
}

pub fn send_signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -{signal} {pid} failed");
    Ok(())
}

/// How the local run's controller was started, read from `/proc` so that a restart is
/// the same process in every respect that matters.
pub struct LocalController {
    pub pid: u32,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

fn nul_separated(path: &Path) -> anyhow::Result<Vec<String>> {
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(raw
        .split(|b| *b == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect())
}

impl LocalController {
    pub fn capture() -> anyhow::Result<Self> {
        let pid: u32 = std::fs::read_to_string(CONTROLLER_PID_FILE)
            .context("the local-up controller is not running (no pid file)")?
            .trim()
            .parse()
            .context("the controller pid file holds no pid")?;
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let mut cmdline = nul_separated(&proc.join("cmdline"))
            .with_context(|| format!("the local-up controller (pid {pid}) is not running"))?;
        if cmdline.is_empty() {
            bail!("pid {pid} has no command line (a zombie?)");
        }
        let program = PathBuf::from(cmdline.remove(0));
        let env = nul_separated(&proc.join("environ"))?
            .into_iter()
            .filter_map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        Ok(Self {
            pid,
            program,
            args: cmdline,
            env,
        })
    }

    /// The value after `flag` on the captured command line, if given.
    pub fn arg_value(&self, flag: &str) -> Option<&str> {
        let at = self.args.iter().position(|a| a == flag)?;
        self.args.get(at + 1).map(String::as_str)
    }

    /// Starts the same command again (after the previous one is gone) and records it in
    /// the pid file, so `lifeguard-cluster down` stops it.
    pub fn restart(&mut self) -> anyhow::Result<Child> {
        self.restart_with(&[])
    }

    /// Like `restart`, with `extra` arguments after the original ones.
    pub fn restart_with(&mut self, extra: &[&str]) -> anyhow::Result<Child> {
        let log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(format!("{STATE}/logs/lifeguard-controller.log"))?;
        let child = Command::new(&self.program)
            .env_clear()
            .envs(self.env.iter().cloned())
            .args(&self.args)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("restarting {}", self.program.display()))?;
        self.pid = child.id();
        std::fs::write(CONTROLLER_PID_FILE, self.pid.to_string())?;
        Ok(child)
    }
}
