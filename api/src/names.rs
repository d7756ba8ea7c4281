//! Names that several components and users depend on (see `shared/DESIGN.md`).

pub const GROUP: &str = "lifeguard.dev";
pub const VERSION: &str = "v1alpha1";

/// Label on every workspace pod; its value is the owning Workspace's name.
pub const WORKSPACE_LABEL: &str = "lifeguard.dev/workspace";
/// Finalizer the webhook stamps on workspace pods: the pod may not vanish before the
/// controller has recorded its final state and finished its disposal.
pub const POD_FINALIZER: &str = "lifeguard.dev/disposal";
/// Finalizer the controller keeps on a Workspace so that deleting it stops it cleanly.
pub const WORKSPACE_FINALIZER: &str = "lifeguard.dev/workspace";

/// Set by the controller on a pod that replaces a rejected one (value: the attempt number).
/// During a window with `allowRecreation` the webhook admits such pods of existing Workspaces.
pub const RECREATION_ANNOTATION: &str = "lifeguard.dev/recreation";

/// Set by the controller on every pod it creates (value: the workspace's start number),
/// so `status.podStarts` can be recovered from the pod if a status write was lost.
pub const START_ANNOTATION: &str = "lifeguard.dev/start";

/// Set by the controller on every pod it creates (value: the Workspace's
/// `metadata.generation` the pod was built from). `status.observedGeneration` reports it,
/// because spec changes are not applied to a pod that already runs.
pub const GENERATION_ANNOTATION: &str = "lifeguard.dev/generation";

/// Set by the controller on every pod it creates (value: the Workspace's labels as a JSON
/// object), so a window's `workspaceSelector` sees the same labels for a workspace pod as
/// for its Workspace. An annotation rather than copied labels: the pod's own labels stay
/// the template's, with no collisions and no key-length limits.
pub const WORKSPACE_LABELS_ANNOTATION: &str = "lifeguard.dev/workspace-labels";

/// Set by the controller on a Workspace that a `drain: true` window stops (value: the
/// window's name). The workspace is stopped gracefully and not started again.
pub const DRAINED_BY_ANNOTATION: &str = "lifeguard.dev/drained-by";

/// Set by the controller beside [`DRAINED_BY_ANNOTATION`]: the end of the occurrence whose
/// drain stopped the workspace (RFC 3339). A window with `spec.resumeAfter` restarts it
/// once that instant has passed (`lifeguard_api::resume`).
pub const DRAINED_UNTIL_ANNOTATION: &str = "lifeguard.dev/drained-until";

/// Set by the controller when a window with `spec.resumeAfter` restarts a workspace it
/// drained (value: `WINDOW/OCCURRENCE-END`, `resume::request`, in place of the drained
/// marks); the workspace acts on each value once (`status.resumed`).
pub const RESUME_ANNOTATION: &str = "lifeguard.dev/resume";

/// Set by the webhook on a Workspace whose running pod someone evicted through the
/// Eviction API (`kubectl drain`, node upgrades, autoscalers), in place of evicting it
/// (value: `lifeguard_api::eviction::EvictionRecord` as JSON: who, from which node, which
/// pod, when). The controller stops that pod the way a drain window does, then starts the
/// workspace again elsewhere unless its `spec.onEviction` is `Stop`.
pub const EVICTION_ANNOTATION: &str = "lifeguard.dev/eviction";

/// Set by the controller on an evicted workspace pod when it acts on the eviction, before
/// the pod is deleted (value: `lifeguard_api::eviction::EvictionNotice` as JSON: who evicted
/// it, from which node, when the eviction was asked, when the stop starts, a message). A
/// downward API volume shows it to the IDE in the pod; the stop starts at `stopAt`, the
/// controller's `--eviction-notice` after the notice.
pub const EVICTION_NOTICE_ANNOTATION: &str = "lifeguard.dev/eviction-notice";

/// Set by a Workspace's owner (or `lifeguard workspaces postpone`) to ask a draining window
/// to stop the workspace later: a duration such as `30m`, counted from the start of the
/// occurrence, at most `postpone::MAX_REQUEST`. A window postpones only up to its
/// `spec.maxPostpone`, and not at all without one (`lifeguard_api::postpone`).
pub const POSTPONE_DRAIN_ANNOTATION: &str = "lifeguard.dev/postpone-drain";

/// Set by the controller on a running workspace pod from a drain window's `notice` until
/// the occurrence is over (value: the notice as JSON, `lifeguard_api::notice::MaintenanceNotice`:
/// window, start, end, message). A downward API volume shows it to the IDE in the pod.
pub const MAINTENANCE_NOTICE_ANNOTATION: &str = "lifeguard.dev/maintenance-notice";

/// Set by the controller on a workspace pod whose disposal a backup agent must confirm
/// (value `required`): the pod keeps its disposal finalizer after its containers stop until
/// the agent sets [`DISPOSAL_RESULT_ANNOTATION`], or the confirmation timeout passes.
pub const DISPOSAL_CONFIRMATION_ANNOTATION: &str = "lifeguard.dev/disposal-confirmation";
/// Set on a stopping workspace pod by the node's backup agent once it has dealt with the
/// workspace's files: `saved`, or `failed` optionally followed by `: <why>`
/// (`lifeguard_api::disposal::DisposalResult`).
pub const DISPOSAL_RESULT_ANNOTATION: &str = "lifeguard.dev/disposal-result";

/// Set by the controller on a workspace pod in the same write that removes its disposal
/// finalizer (value: the time, RFC 3339). Besides telling when the pod was let go, it makes
/// the kubelet look at the pod again: the kubelet passes on pod updates that change
/// annotations but not those that only change finalizers, and without a look it deletes a
/// stopped pod's object only at its next periodic status sync (up to 10 s later).
pub const RELEASED_ANNOTATION: &str = "lifeguard.dev/released";

/// Set by the controller on each Node a node-scoped window selects while it is active:
/// `"false"` while covered workspace pods are left on the node, `"true"` once none is, so
/// an upgrade tool can wait for it (`docs/operations.md`, "Upgrade one node pool").
/// Removed when the occurrence ends or the window is deleted or suspended.
pub const NODE_DRAINED_LABEL: &str = "lifeguard.dev/drained";
/// Beside [`NODE_DRAINED_LABEL`]: the name of the window that set it.
pub const NODE_WINDOW_ANNOTATION: &str = "lifeguard.dev/maintenance-window";

/// The Node condition the prober keeps up to date with its verdict.
pub const NODE_CONDITION: &str = "LifeguardProbesHealthy";
/// The `NoSchedule` taint the prober may put on its unhealthy node.
pub const NODE_TAINT_KEY: &str = "lifeguard.dev/unhealthy";
/// NoSchedule taint (and a label of the same key, which the fleet guard counts) a node
/// registers with (`kubelet --register-with-taints`, `--node-labels`): it takes no
/// workspaces until its prober's first healthy verdict removes both.
pub const NODE_UNPROVEN_KEY: &str = "lifeguard.dev/unproven";

/// The controller's `--concurrency` default: Workspaces reconciled at the same time. The
/// mass-start bench compares the controller with a client making as many requests at once.
pub const CONTROLLER_DEFAULT_CONCURRENCY: u16 = 16;

/// The DNS domain that prefixes every label and annotation key lifeguard owns.
pub const KEY_DOMAIN: &str = GROUP;

/// Whether a label or annotation key is lifeguard's own (`lifeguard.dev/...` or
/// `<sub>.lifeguard.dev/...`). Only the controller sets such keys on a workspace pod; a
/// Workspace's pod template may not carry them (they could forge controller state, such as
/// the re-creation marker).
pub fn is_lifeguard_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    let prefix = prefix.to_ascii_lowercase();
    prefix == KEY_DOMAIN
        || prefix
            .strip_suffix(KEY_DOMAIN)
            .is_some_and(|sub| sub.ends_with('.'))
}

/// Prefix of every Prometheus metric lifeguard exports.
pub const METRIC_PREFIX: &str = "lifeguard_";

/// The pod a Workspace owns. Deterministic, so a re-created pod keeps its name.
pub fn pod_name(workspace: &str) -> String {
    format!("ws-{workspace}")
}

/// The Workspace whose pod this is, by [`pod_name`]'s rule; `None` for any other pod.
pub fn workspace_of_pod(pod: &str) -> Option<&str> {
    pod.strip_prefix("ws-").filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DNS-1123 subdomain, the rule the API server applies to pod names.
    fn is_dns1123_subdomain(name: &str) -> bool {
        name.len() <= 253
            && name.split('.').all(|label| {
                let bytes = label.as_bytes();
                !bytes.is_empty()
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                    && bytes[0].is_ascii_alphanumeric()
                    && bytes[bytes.len() - 1].is_ascii_alphanumeric()
            })
    }

    #[test]
    fn workspace_of_pod_undoes_pod_name() {
        for workspace in ["alice", "ws-bob", "a"] {
            assert_eq!(workspace_of_pod(&pod_name(workspace)), Some(workspace));
        }
        for other in ["alice", "ws-", "w-alice"] {
            assert_eq!(workspace_of_pod(other), None, "{other}");
        }
    }

    #[test]
    fn pod_name_is_ws_dash_workspace_and_a_valid_pod_name() {
        let longest = "a".repeat(63);
        let cases = [
            ("alice-dev", "ws-alice-dev"),
            ("a", "ws-a"),
            ("0day", "ws-0day"),
            ("team.alice", "ws-team.alice"),
            (longest.as_str(), &*format!("ws-{longest}")),
        ];
        for (workspace, expected) in cases {
            let name = pod_name(workspace);
            assert_eq!(name, expected, "{workspace}");
            assert!(
                is_dns1123_subdomain(&name),
                "{name} is not a valid pod name"
            );
        }
    }

    #[test]
    fn distinct_workspaces_get_distinct_pods() {
        let names = ["a", "a-b", "ab", "a.b", "ws-a", "b", "ws-ws-a"];
        let pods: std::collections::BTreeSet<String> = names.iter().map(|n| pod_name(n)).collect();
        assert_eq!(pods.len(), names.len(), "{pods:?}");
    }

    #[test]
    fn lifeguard_keys_are_those_under_its_domain() {
        let cases = [
            ("lifeguard.dev/recreation", true),
            ("lifeguard.dev/workspace", true),
            ("LIFEGUARD.DEV/start", true),
            ("drain.lifeguard.dev/by", true),
            ("notlifeguard.dev/x", false),
            ("lifeguard.dev.example.com/x", false),
            ("example.com/lifeguard.dev", false),
            ("lifeguard.dev", false),
            ("team", false),
        ];
        for (key, expected) in cases {
            assert_eq!(is_lifeguard_key(key), expected, "{key}");
        }
    }
}
