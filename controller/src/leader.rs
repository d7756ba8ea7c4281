//! Leader election on a Lease, so two replicas never reconcile at once.

use anyhow::{Context as _, bail};
use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub struct Leadership {
    state: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
}

pub fn identity(configured: Option<String>) -> String {
    configured.unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "lifeguard-controller".into());
        format!("{host}-{}", std::process::id())
    })
}

impl Leadership {
    pub async fn start(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        seconds: u64,
    ) -> anyhow::Result<Self> {
        let manager = LeaseManagerBuilder::new(client, name)
            .with_namespace(namespace)
            .with_identity(identity)
            .with_duration(seconds)
            .with_grace(seconds.div_ceil(3).max(1))
            .build()
            .await
            .with_context(|| format!("preparing Lease {namespace}/{name}"))?;
        let (state, task) = manager.watch().await;
        Ok(Self { state, task })
    }

    /// Resolves once this replica leads.
    pub async fn acquired(&mut self) -> anyhow::Result<()> {
        while !*self.state.borrow_and_update() {
            if self.state.changed().await.is_err() {
                bail!("the lease manager stopped");
            }
        }
        Ok(())
    }

    /// Resolves when this replica stops leading.
    pub async fn lost(&mut self) {
        while *self.state.borrow_and_update() {
            if self.state.changed().await.is_err() {
                return;
            }
        }
    }

    /// Gives the Lease up so a standby takes over at once rather than after it expires.
    pub async fn release(self) {
        drop(self.state);
        match self.task.await {
            Ok(Ok(_)) => tracing::info!("leader Lease released"),
            Ok(Err(error)) => tracing::warn!(%error, "releasing the leader Lease failed"),
            Err(error) => tracing::warn!(%error, "lease task ended abnormally"),
        }
    }
}
