//! The controller's configuration, checked (`flags::Config::settings` builds it): what both
//! reconcilers and every pure decision of the workspace plan read. Its own module, apart
//! from the plan, so the deciders that take it (`disposal`, `start`, `stuck_terminating`)
//! need not import the plan that calls them.

use jiff::SignedDuration;
use lifeguard_api::rejection::Classifier;

use crate::workspace::namespace_policy::NamespacePolicy;
use crate::workspace::service_account_policy::ServiceAccountPolicy;

#[derive(Debug, Clone)]
pub struct Settings {
    /// Wait between a rejected pod being gone and its first replacement; it doubles
    /// with each further replacement (`backoff::delay`).
    pub backoff: SignedDuration,
    /// The longest wait before a replacement.
    pub backoff_max: SignedDuration,
    /// Replacements per workspace before it is marked Failed.
    pub max_retries: u32,
    /// How long a deleting pod may take to terminate its containers before the disposal
    /// finalizer is released anyway.
    pub disposal_timeout: SignedDuration,
    /// How long a pod's node may be not Ready before the workspace says NodeLost
    /// (`node_loss`).
    pub node_lost_after: SignedDuration,
    /// Workspaces whose spec does not say: does a backup agent confirm their disposal?
    pub confirm_disposal: bool,
    /// How long after a pod was asked to stop the release waits for that confirmation.
    pub disposal_confirm_timeout: SignedDuration,
    /// Which kubelet rejection reasons are transient or permanent.
    pub reasons: Classifier,
    /// Replacement pods prefer other nodes than the one that refused their predecessor.
    pub avoid_refusing_node: bool,
    /// Wait after the API first refuses to create a pod; it doubles with each refusal in a
    /// row, up to `create_backoff_max`.
    pub create_backoff: SignedDuration,
    pub create_backoff_max: SignedDuration,
    /// Namespaces whose Workspaces never get a pod (`namespace_policy`).
    pub namespaces: NamespacePolicy,
    /// The ServiceAccounts workspace pods may run as (`service_account_policy`).
    pub service_accounts: ServiceAccountPolicy,
    /// How long a pod may take to be Ready when its Workspace's `spec.startTimeout` does
    /// not say (`start`).
    pub start_timeout: SignedDuration,
    /// How long past its grace period a released pod with no running container may stay
    /// Terminating before it is force-deleted (`stuck_terminating`).
    pub stuck_terminating_after: SignedDuration,
    /// The longest grace period a workspace pod gets (`grace::cap_grace_period`): a
    /// template's own would otherwise hold a drain's budget slot as long as its author
    /// likes, since every timeout of a stop counts from the end of the grace period.
    pub max_grace_period: SignedDuration,
    /// Evicted workspace pods stopped at once per node (`eviction::budget_allows`); the
    /// evictions of the others are answered 429 meanwhile.
    pub eviction_max_per_node: u32,
    /// Evicted workspace pods stopped at once in the cluster (`eviction::cluster_budget_allows`;
    /// 0: no limit).
    pub eviction_max_concurrent: u32,
    /// How long an evicted workspace is told of its stop before its pod is deleted
    /// (`eviction::notice_step`).
    pub eviction_notice: SignedDuration,
    /// The namespaces a window's pods gate looks in (`window::gate_answers`); `None`: it cannot be
    /// evaluated, and holds.
    pub pods_gate_namespaces: Option<kube::core::Selector>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            backoff: SignedDuration::from_secs(15),
            backoff_max: SignedDuration::from_mins(5),
            max_retries: 3,
            disposal_timeout: SignedDuration::from_secs(120),
            node_lost_after: SignedDuration::from_secs(60),
            confirm_disposal: false,
            disposal_confirm_timeout: SignedDuration::from_mins(10),
            reasons: Classifier::default(),
            avoid_refusing_node: true,
            create_backoff: SignedDuration::from_secs(5),
            create_backoff_max: SignedDuration::from_secs(120),
            namespaces: NamespacePolicy::default(),
            service_accounts: ServiceAccountPolicy::default(),
            start_timeout: SignedDuration::from_mins(10),
            stuck_terminating_after: SignedDuration::from_mins(1),
            max_grace_period: SignedDuration::from_mins(5),
            pods_gate_namespaces: None,
            eviction_max_per_node: 2,
            eviction_max_concurrent: 10,
            eviction_notice: SignedDuration::ZERO,
        }
    }
}
