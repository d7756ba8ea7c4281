//! CPU profiles of kube-apiserver during `bench-mass-start`'s phases, when
//! `APISERVER_PROFILE=DIR` is set: from each phase's first request, a profile of
//! `APISERVER_PROFILE_SECONDS` (default 30) is taken from the API server's
//! `/debug/pprof/profile` into `DIR/PHASE.pprof`, to be read with
//! `bench/apiserver-profile-report DIR`. The API server serves it only when started with
//! `--profiling` (`cluster/lifeguard-cluster apiserver-profiling on`). The window is fixed
//! because the endpoint cannot be stopped early; keep it shorter than the shortest phase
//! so that each profile shows the phase's own work and nothing after it.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use lifeguard_e2e::LOCAL_KUBECONFIG;

/// Where profiles go and how long each is, from the environment; `None` when off.
pub struct Profiler {
    dir: PathBuf,
    seconds: u32,
}

/// A profile being taken.
pub struct Taking {
    phase: &'static str,
    task: tokio::task::JoinHandle<anyhow::Result<PathBuf>>,
}

impl Profiler {
    pub fn from_env() -> anyhow::Result<Option<Self>> {
        let Some(dir) = std::env::var_os("APISERVER_PROFILE") else {
            return Ok(None);
        };
        let seconds = match std::env::var("APISERVER_PROFILE_SECONDS") {
            Ok(s) => s
                .parse()
                .ok()
                .filter(|s| (1..=600).contains(s))
                .with_context(|| {
                    format!("APISERVER_PROFILE_SECONDS must be 1 to 600 seconds, not {s:?}")
                })?,
            Err(_) => 30,
        };
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the profile directory {}", dir.display()))?;
        Ok(Some(Self { dir, seconds }))
    }

    /// Starts a profile of this phase; it runs in the background for the fixed window.
    pub fn start(&self, phase: &'static str) -> Taking {
        let out = self.dir.join(format!("{phase}.pprof"));
        let url = format!("/debug/pprof/profile?seconds={}", self.seconds);
        let task = tokio::task::spawn_blocking(move || {
            let got = Command::new("kubectl")
                .args(["--kubeconfig", LOCAL_KUBECONFIG, "get", "--raw", &url])
                .output()
                .context("running kubectl")?;
            anyhow::ensure!(
                got.status.success(),
                "kubectl get --raw {url}: {} (is the API server profiling? \
                 `cluster/lifeguard-cluster apiserver-profiling on`)",
                String::from_utf8_lossy(&got.stderr).trim()
            );
            std::fs::write(&out, &got.stdout)
                .with_context(|| format!("writing {}", out.display()))?;
            Ok(out)
        });
        Taking { phase, task }
    }
}

impl Taking {
    /// Waits for the profile and says where it is. A failed profile is reported, not
    /// fatal: the phase's figures stand without it.
    pub async fn finish(self) {
        match self.task.await {
            Ok(Ok(path)) => println!(
                "kube-apiserver CPU profile of the {} phase's first seconds: {}",
                self.phase,
                path.display()
            ),
            Ok(Err(e)) => println!("no profile of the {} phase: {e:#}", self.phase),
            Err(e) => println!("no profile of the {} phase: {e}", self.phase),
        }
    }
}

/// Starts a profile when profiling is on.
pub fn start(profiler: Option<&Profiler>, phase: &'static str) -> Option<Taking> {
    profiler.map(|p| p.start(phase))
}

/// Finishes a profile when one was started.
pub async fn finish(taking: Option<Taking>) {
    if let Some(taking) = taking {
        taking.finish().await;
    }
}
