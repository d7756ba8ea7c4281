//! The local cluster's node commands (`cluster/lifeguard-cluster node ...`), for tests that
//! lose a node or restart its kubelet.

use std::process::Command;

use anyhow::{Context as _, ensure};

/// The second node of `./local-up`'s two; the first runs the control plane.
pub const SECOND_NODE: &str = "lifeguard-node-2";

/// Runs `cluster/lifeguard-cluster ARGS...`; fails with its output if it fails.
pub fn lifeguard_cluster(args: &[&str]) -> anyhow::Result<()> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../cluster/lifeguard-cluster");
    let out = Command::new(script)
        .args(args)
        .output()
        .with_context(|| format!("running lifeguard-cluster {args:?}"))?;
    ensure!(
        out.status.success(),
        "lifeguard-cluster {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// A node whose kubelet and container runtime are stopped until this is dropped; dropping
/// starts them again, also when the test fails.
pub struct StoppedNode {
    name: String,
    started: bool,
}

impl StoppedNode {
    pub fn stop(name: &str) -> anyhow::Result<Self> {
        lifeguard_cluster(&["node", "stop", name])?;
        Ok(Self {
            name: name.to_string(),
            started: false,
        })
    }

    /// Starts the node again now (a fresh kubelet, as after a node restart).
    pub fn start(mut self) -> anyhow::Result<()> {
        self.started = true;
        lifeguard_cluster(&["node", "start", &self.name])
    }
}

impl Drop for StoppedNode {
    fn drop(&mut self) {
        if self.started {
            return;
        }
        if let Err(e) = lifeguard_cluster(&["node", "start", &self.name]) {
            eprintln!("warning: could not start {} again: {e:#}", self.name);
        }
    }
}
