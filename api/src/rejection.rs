//! The reasons a kubelet gives when it refuses a pod after scheduling, and whether
//! re-creating the same pod can help.
//!
//! Sources (kubernetes/kubernetes): `pkg/kubelet/lifecycle/predicate.go` (the general
//! predicates and the OutOf<resource> family), `pkg/kubelet/kubelet.go` (`rejectPod`, and
//! `admissionRejectionReasons`, the list the kubelet's own metric uses),
//! `pkg/kubelet/lifecycle/handlers.go` (AppArmor, pod-level resources, pod features),
//! `pkg/kubelet/sysctl/allowlist.go`, `pkg/kubelet/cm/topologymanager/scope.go`,
//! `pkg/kubelet/eviction/eviction_manager.go` (`Admit`), and
//! `pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether re-creating a refused pod can succeed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum RejectionClass {
    /// The node's state refused it; the same pod can start later or elsewhere: re-create.
    Transient,
    /// The pod's own spec is refused; re-creating it can never succeed: give up at once.
    Permanent,
}

impl RejectionClass {
    pub const ALL: [RejectionClass; 2] = [Self::Transient, Self::Permanent];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Transient => "Transient",
            Self::Permanent => "Permanent",
        }
    }

    /// The `class` label of `lifeguard_controller_pod_rejections_total`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Transient => "transient",
            Self::Permanent => "permanent",
        }
    }
}

/// One catalogue entry. A `reason` ending in `*` matches by prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownReason {
    pub reason: &'static str,
    pub class: RejectionClass,
    /// The kubelet source file that sets it.
    pub source: &'static str,
    pub why: &'static str,
}

const fn transient(reason: &'static str, source: &'static str, why: &'static str) -> KnownReason {
    KnownReason {
        reason,
        class: RejectionClass::Transient,
        source,
        why,
    }
}

const fn permanent(reason: &'static str, source: &'static str, why: &'static str) -> KnownReason {
    KnownReason {
        reason,
        class: RejectionClass::Permanent,
        source,
        why,
    }
}

const PREDICATE: &str = "lifecycle/predicate.go";
const HANDLERS: &str = "lifecycle/handlers.go";

/// Every reason current kubelets (and older ones) put on a pod they refuse at admission.
pub const CATALOGUE: &[KnownReason] = &[
    transient(
        "NodeAffinity",
        PREDICATE,
        "the node's labels changed after scheduling, or the kubelet saw them late",
    ),
    transient(
        "NodeName",
        PREDICATE,
        "the pod reached a kubelet whose node name differs; the scheduler binds the replacement afresh",
    ),
    transient(
        "NodePorts",
        PREDICATE,
        "another pod on that node holds the host port; it frees, or another node has it free",
    ),
    transient(
        "TaintToleration",
        PREDICATE,
        "a NoExecute taint arrived on the node after scheduling; the scheduler avoids it next time",
    ),
    transient(
        "OutOfcpu",
        PREDICATE,
        "the node's CPU was momentarily short of what the scheduler saw",
    ),
    transient(
        "OutOfmemory",
        PREDICATE,
        "the node's memory was momentarily short of what the scheduler saw",
    ),
    transient(
        "OutOfephemeral-storage",
        PREDICATE,
        "the node's ephemeral storage was momentarily short",
    ),
    transient("OutOfpods", PREDICATE, "the node was at its maxPods"),
    transient(
        "OutOf*",
        PREDICATE,
        "an extended resource (OutOf<resource>) was momentarily short",
    ),
    transient(
        "UnexpectedAdmissionError",
        "cm/topologymanager/scope.go",
        "a device plugin allocation or resource update failed on that node",
    ),
    transient(
        "TopologyAffinityError",
        "cm/topologymanager/scope.go",
        "the topology manager could not align resources on that node now",
    ),
    transient(
        "InvalidNodeInfo",
        PREDICATE,
        "the kubelet could not read its own Node object",
    ),
    transient(
        "VolumeAttachmentLimitExceeded",
        "volumemanager (kubelet.go admissionRejectionReasons)",
        "that node is at its volume attachment limit",
    ),
    transient(
        "NodeShutdown",
        "nodeshutdown/nodeshutdown_manager_linux.go",
        "the node is shutting down; another node takes the replacement",
    ),
    transient(
        "Evicted",
        "eviction/eviction_manager.go",
        "the node was under memory, disk or PID pressure at admission",
    ),
    transient(
        "UnknownReason",
        PREDICATE,
        "a general predicate failed without a reason; nothing says it will again",
    ),
    transient(
        "UnexpectedPredicateFailureType",
        PREDICATE,
        "a predicate failed in an unexpected way; nothing says it will again",
    ),
    permanent(
        "PodOSSelectorNodeLabelDoesNotMatch",
        PREDICATE,
        "the template's kubernetes.io/os label names another OS than the nodes it is scheduled to",
    ),
    permanent(
        "PodOSNotSupported",
        PREDICATE,
        "spec.os names an OS the kubelet does not run",
    ),
    permanent(
        "InitContainerRestartPolicyForbidden",
        HANDLERS,
        "the kubelet does not support init containers with a restartPolicy (sidecars)",
    ),
    permanent(
        "SupplementalGroupsPolicyNotSupported",
        PREDICATE,
        "the node does not support supplementalGroupsPolicy: Strict",
    ),
    permanent(
        "PodLevelResourcesNotSupported",
        HANDLERS,
        "the kubelet does not support pod-level resources",
    ),
    permanent(
        "PodFeatureUnsupported",
        HANDLERS,
        "the pod needs a feature the node does not declare",
    ),
    permanent(
        "SysctlForbidden",
        "sysctl/allowlist.go",
        "the template sets a sysctl the kubelet does not allow",
    ),
    permanent(
        "AppArmor",
        HANDLERS,
        "the kubelet cannot enforce the AppArmor profile the template asks for",
    ),
];

/// Reasons a Failed pod that never ran can carry without having been refused at admission.
pub const NOT_REJECTIONS: &[(&str, &str)] = &[(
    "DeadlineExceeded",
    "activeDeadlineSeconds ended it (for example during a slow image pull); it was admitted",
)];

/// The `reason` label for reasons neither the catalogue nor the configuration names, so
/// that a kubelet inventing reasons cannot grow the metric without bound.
pub const OTHER_LABEL: &str = "other";

fn matches(pattern: &str, reason: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => reason.len() > prefix.len() && reason.starts_with(prefix),
        None => pattern == reason,
    }
}

/// The catalogue plus the operator's additions (`--transient-rejection-reasons`,
/// `--permanent-rejection-reasons`). A configured entry wins over the catalogue; an exact
/// name wins over a `*` pattern.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classifier {
    transient: Vec<String>,
    permanent: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClassifierError {
    #[error("rejection reason {0:?} is configured as both transient and permanent")]
    Both(String),
    #[error("empty rejection reason in the configuration")]
    Empty,
}

/// How a refusal is classified, and the bounded label to count it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub class: RejectionClass,
    /// The catalogue or configuration entry that decided, or [`OTHER_LABEL`].
    pub label: String,
}

impl Classifier {
    pub fn new(
        transient: impl IntoIterator<Item = impl Into<String>>,
        permanent: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, ClassifierError> {
        let clean = |list: Vec<String>| -> Result<Vec<String>, ClassifierError> {
            let list: Vec<String> = list.into_iter().map(|s| s.trim().to_string()).collect();
            if list.iter().any(|s| s.is_empty() || s == "*") {
                return Err(ClassifierError::Empty);
            }
            Ok(list)
        };
        let transient = clean(transient.into_iter().map(Into::into).collect())?;
        let permanent = clean(permanent.into_iter().map(Into::into).collect())?;
        if let Some(both) = transient.iter().find(|t| permanent.contains(t)) {
            return Err(ClassifierError::Both(both.clone()));
        }
        Ok(Self {
            transient,
            permanent,
        })
    }

    pub fn classify(&self, reason: &str) -> Classification {
        let configured = self
            .transient
            .iter()
            .map(|p| (p.as_str(), RejectionClass::Transient))
            .chain(
                self.permanent
                    .iter()
                    .map(|p| (p.as_str(), RejectionClass::Permanent)),
            );
        let known = CATALOGUE.iter().map(|k| (k.reason, k.class));
        // Exact names first (configuration, then catalogue), then patterns in the same order.
        let entries: Vec<(&str, RejectionClass)> = configured.chain(known).collect();
        let exact = entries.iter().find(|(p, _)| *p == reason);
        let pattern = || {
            entries
                .iter()
                .find(|(p, _)| p.ends_with('*') && matches(p, reason))
        };
        match exact.or_else(pattern) {
            Some((label, class)) => Classification {
                class: *class,
                label: (*label).to_string(),
            },
            None => Classification {
                class: RejectionClass::Transient,
                label: OTHER_LABEL.into(),
            },
        }
    }

    /// The reason names a refusal the catalogue or the configuration knows, as opposed
    /// to one only presumed to be a refusal because nothing ran.
    pub fn is_known(&self, reason: &str) -> bool {
        self.classify(reason).label != OTHER_LABEL
    }
}

/// Whether a Failed pod's `reason` can be an admission refusal at all.
pub fn can_be_rejection(reason: &str) -> bool {
    !reason.is_empty() && !NOT_REJECTIONS.iter().any(|(r, _)| *r == reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use RejectionClass::{Permanent, Transient};

    #[test]
    fn every_reason_current_kubelets_use_is_classified() {
        let classifier = Classifier::default();
        let cases = [
            ("NodeAffinity", Transient, "NodeAffinity"),
            ("NodeName", Transient, "NodeName"),
            ("NodePorts", Transient, "NodePorts"),
            ("TaintToleration", Transient, "TaintToleration"),
            ("OutOfcpu", Transient, "OutOfcpu"),
            ("OutOfmemory", Transient, "OutOfmemory"),
            (
                "OutOfephemeral-storage",
                Transient,
                "OutOfephemeral-storage",
            ),
            ("OutOfpods", Transient, "OutOfpods"),
            ("OutOfnvidia.com/gpu", Transient, "OutOf*"),
            ("OutOfhugepages-2Mi", Transient, "OutOf*"),
            (
                "UnexpectedAdmissionError",
                Transient,
                "UnexpectedAdmissionError",
            ),
            ("TopologyAffinityError", Transient, "TopologyAffinityError"),
            ("InvalidNodeInfo", Transient, "InvalidNodeInfo"),
            (
                "VolumeAttachmentLimitExceeded",
                Transient,
                "VolumeAttachmentLimitExceeded",
            ),
            ("NodeShutdown", Transient, "NodeShutdown"),
            ("Evicted", Transient, "Evicted"),
            ("UnknownReason", Transient, "UnknownReason"),
            (
                "UnexpectedPredicateFailureType",
                Transient,
                "UnexpectedPredicateFailureType",
            ),
            (
                "PodOSSelectorNodeLabelDoesNotMatch",
                Permanent,
                "PodOSSelectorNodeLabelDoesNotMatch",
            ),
            ("PodOSNotSupported", Permanent, "PodOSNotSupported"),
            (
                "InitContainerRestartPolicyForbidden",
                Permanent,
                "InitContainerRestartPolicyForbidden",
            ),
            (
                "SupplementalGroupsPolicyNotSupported",
                Permanent,
                "SupplementalGroupsPolicyNotSupported",
            ),
            (
                "PodLevelResourcesNotSupported",
                Permanent,
                "PodLevelResourcesNotSupported",
            ),
            ("PodFeatureUnsupported", Permanent, "PodFeatureUnsupported"),
            ("SysctlForbidden", Permanent, "SysctlForbidden"),
            ("AppArmor", Permanent, "AppArmor"),
            // Reasons no kubelet uses (the old defaults) and future ones: transient, "other".
            ("Taint", Transient, OTHER_LABEL),
            ("NodeSelectorMismatching", Transient, OTHER_LABEL),
            ("SomeFutureReason", Transient, OTHER_LABEL),
            ("OutOf", Transient, OTHER_LABEL),
        ];
        for (reason, class, label) in cases {
            let got = classifier.classify(reason);
            assert_eq!((got.class, got.label.as_str()), (class, label), "{reason}");
        }
    }

    #[test]
    fn catalogue_entries_are_unique_and_explained() {
        for (i, k) in CATALOGUE.iter().enumerate() {
            assert!(!k.why.is_empty() && !k.source.is_empty(), "{}", k.reason);
            assert!(
                CATALOGUE[i + 1..].iter().all(|o| o.reason != k.reason),
                "{} twice",
                k.reason
            );
        }
    }

    #[test]
    fn configuration_adds_and_overrides() {
        let classifier = Classifier::new(
            ["SysctlForbidden", "VendorBusy"],
            ["NodeAffinity", "OutOf*", "VendorNever"],
        )
        .expect("valid");
        let cases = [
            ("SysctlForbidden", Transient, "SysctlForbidden"),
            ("VendorBusy", Transient, "VendorBusy"),
            ("NodeAffinity", Permanent, "NodeAffinity"),
            ("VendorNever", Permanent, "VendorNever"),
            // A configured pattern beats the catalogue's; an exact catalogue name beats both.
            ("OutOfexample.com/fpga", Permanent, "OutOf*"),
            ("OutOfcpu", Transient, "OutOfcpu"),
            ("AppArmor", Permanent, "AppArmor"),
        ];
        for (reason, class, label) in cases {
            let got = classifier.classify(reason);
            assert_eq!((got.class, got.label.as_str()), (class, label), "{reason}");
        }
        assert!(classifier.is_known("VendorNever"));
        assert!(!classifier.is_known("Whatever"));
    }

    #[test]
    fn contradictory_or_empty_configuration_is_refused() {
        assert_eq!(
            Classifier::new(["NodePorts"], ["NodePorts"]),
            Err(ClassifierError::Both("NodePorts".into()))
        );
        assert_eq!(
            Classifier::new([""], Vec::<String>::new()),
            Err(ClassifierError::Empty)
        );
        assert_eq!(
            Classifier::new(Vec::<String>::new(), ["*"]),
            Err(ClassifierError::Empty)
        );
    }

    #[test]
    fn deadline_exceeded_is_not_a_refusal() {
        assert!(!can_be_rejection("DeadlineExceeded"));
        assert!(!can_be_rejection(""));
        assert!(can_be_rejection("Evicted"));
        assert!(can_be_rejection("SomeFutureReason"));
    }
}
