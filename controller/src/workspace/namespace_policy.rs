//! "May this Workspace have a pod here?" by its namespace. Creating a Workspace is, by
//! design, creating a pod with that namespace's ServiceAccounts and Secrets: in
//! `kube-system` or lifeguard's own namespace that pod could run as lifeguard's controller
//! or mount the webhook's certificate, and the webhook does not even validate Workspaces
//! there (those namespaces are exempt from admission so the cluster cannot lock itself
//! out). So the controller refuses them, and any namespace an operator adds with
//! `--refuse-namespace`: such a Workspace is `Failed` (reason `NamespaceRefused`) with a
//! Warning Event, and no pod is ever created for it.

use std::collections::BTreeSet;

use jiff::Timestamp;
use lifeguard_api::{Workspace, WorkspacePhase, WorkspaceStatus};

use crate::status::set_failed;

/// Condition reason and Event reason of a refused Workspace.
pub const REASON_NAMESPACE_REFUSED: &str = "NamespaceRefused";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespacePolicy {
    refused: BTreeSet<String>,
}

impl Default for NamespacePolicy {
    fn default() -> Self {
        Self::new("lifeguard-system", [])
    }
}

impl NamespacePolicy {
    /// `kube-system` and `own_namespace` always; `extra` as configured.
    pub fn new(own_namespace: &str, extra: impl IntoIterator<Item = String>) -> Self {
        let mut refused: BTreeSet<String> = extra
            .into_iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        refused.insert("kube-system".to_string());
        refused.insert(own_namespace.to_string());
        Self { refused }
    }

    /// Why a Workspace in `namespace` gets no pod, if it does not.
    pub fn refusal(&self, namespace: &str) -> Option<String> {
        self.refused.contains(namespace).then(|| {
            format!(
                "Workspaces in namespace {namespace} are refused: a workspace pod there could run \
                 with that namespace's ServiceAccounts and Secrets (refused: {}; \
                 see --refuse-namespace)",
                self.refused.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
    }
}

/// The status of a refused Workspace: `Failed`, with `reason` and `message` in the
/// `Failed` condition.
pub fn refused_status(
    ws: &Workspace,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> WorkspaceStatus {
    let mut next = ws.status.clone().unwrap_or_default();
    next.phase = Some(WorkspacePhase::Failed);
    set_failed(
        &mut next.conditions,
        reason,
        message,
        ws.metadata.generation,
        now,
    );
    next
}

#[cfg(test)]
#[path = "namespace_policy_tests.rs"]
mod namespace_policy_tests;
