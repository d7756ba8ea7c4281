//! "May this Workspace's pod run as this ServiceAccount?" Creating a Workspace is creating a
//! pod with any of its namespace's ServiceAccounts; a platform whose namespaces also hold
//! privileged accounts (a CI deployer, an operator's) can name the ones workspace pods may
//! use with `--allow-service-account`. A Workspace whose pod template names another is
//! `Failed` (reason `ServiceAccountRefused`) with a Warning Event, and never gets a pod.
//! Without the flag every ServiceAccount is allowed, as before.

use std::collections::BTreeSet;

use lifeguard_api::Workspace;

/// Condition reason and Event reason of a Workspace refused for its ServiceAccount.
pub const REASON_SERVICE_ACCOUNT_REFUSED: &str = "ServiceAccountRefused";

/// The account a pod runs as when its spec names none.
const DEFAULT_ACCOUNT: &str = "default";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceAccountPolicy {
    /// `None`: any account.
    allowed: Option<BTreeSet<String>>,
}

impl ServiceAccountPolicy {
    /// Only `allowed` (names, in any namespace); an empty list allows any account.
    pub fn new(allowed: impl IntoIterator<Item = String>) -> Self {
        let allowed: BTreeSet<String> = allowed
            .into_iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        Self {
            allowed: (!allowed.is_empty()).then_some(allowed),
        }
    }

    /// Why `ws`'s pod may not run as the account its template names, if it may not.
    pub fn refusal(&self, ws: &Workspace) -> Option<String> {
        let allowed = self.allowed.as_ref()?;
        let account = account_of(ws);
        (!allowed.contains(account)).then(|| {
            format!(
                "the pod template runs as ServiceAccount {account:?}, which workspace pods may not \
                 use (allowed: {}; see --allow-service-account)",
                allowed.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
    }
}

/// The ServiceAccount `ws`'s pod would run as: `serviceAccountName`, else the deprecated
/// `serviceAccount` (which the API server still honours), else `default`.
fn account_of(ws: &Workspace) -> &str {
    let spec = ws.spec.pod_template.spec.as_ref();
    spec.and_then(|s| s.service_account_name.as_deref())
        .or_else(|| spec.and_then(|s| s.service_account.as_deref()))
        .filter(|a| !a.is_empty())
        .unwrap_or(DEFAULT_ACCOUNT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws(spec: serde_json::Value) -> Workspace {
        serde_json::from_value(json!({
            "metadata": {"name": "alice", "namespace": "team"},
            "spec": {"podTemplate": {"spec": spec}}
        }))
        .expect("workspace literal")
    }

    #[test]
    fn which_accounts_a_workspace_pod_may_use() {
        let only = ServiceAccountPolicy::new(["default".to_string(), " ide ".to_string()]);
        let cases = [
            (
                "no account named: default",
                json!({"containers": []}),
                false,
            ),
            (
                "allowed",
                json!({"containers": [], "serviceAccountName": "ide"}),
                false,
            ),
            (
                "another",
                json!({"containers": [], "serviceAccountName": "deployer"}),
                true,
            ),
            (
                "the deprecated field counts",
                json!({"containers": [], "serviceAccount": "deployer"}),
                true,
            ),
            (
                "empty name: default",
                json!({"containers": [], "serviceAccountName": ""}),
                false,
            ),
        ];
        for (what, spec, refused) in cases {
            let got = only.refusal(&ws(spec));
            assert_eq!(got.is_some(), refused, "{what}: {got:?}");
        }
        let message = only
            .refusal(&ws(
                json!({"containers": [], "serviceAccountName": "deployer"}),
            ))
            .unwrap_or_default();
        assert!(
            message.contains("\"deployer\"") && message.contains("allowed: default, ide"),
            "{message}"
        );
        let any = ServiceAccountPolicy::new([" ".to_string()]);
        assert_eq!(
            any.refusal(&ws(
                json!({"containers": [], "serviceAccountName": "deployer"})
            )),
            None,
            "without the flag any account"
        );
    }
}
