//! What the certificate manager does next, decided from stored state only.
//!
//! Every replica runs the same loop: read the Secret and lifeguard's webhook
//! configurations, call [`next_action`], carry out that one step, read again. Because the
//! decision depends only on what is stored (never on what this replica did before), two
//! replicas reach the same step, and the loser of a write conflict simply re-plans.
//!
//! The order of the steps keeps one invariant: the leaf being served is signed by a CA
//! present in every published `caBundle`, so the API server never meets an unknown CA.
//!
//! - A CA is rotated by *adding* the new CA to the bundle; the old leaf keeps serving.
//! - The bundle is published to every configuration before anything else happens.
//! - A leaf is issued only by a CA that every configuration already carries.
//! - A CA leaves the bundle only when no leaf it signed can still be served: it has
//!   expired, or the current leaf (signed by another CA) is older than `retire_grace`,
//!   which is longer than replicas take to load a new leaf.

use jiff::{SignedDuration, Timestamp};

/// A certificate's identity: its DER bytes (two certificates are the same when their
/// bytes are).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CertId(pub Vec<u8>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaCert {
    pub id: CertId,
    pub not_before: Timestamp,
    pub not_after: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// The bundle CA whose key signed it; `None` when no CA in the bundle did.
    pub signed_by: Option<CertId>,
    pub not_before: Timestamp,
    pub not_after: Timestamp,
    pub dns_names: Vec<String>,
}

/// The operator's `lifeguard.dev/renew` annotation on the Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renew {
    /// `certificate`: a new leaf from the same CA.
    Certificate,
    /// `ca`: a full CA rotation.
    Ca,
    /// `ca-in-progress`: written by the manager when it has added the new CA; removed
    /// with the first leaf that CA signs.
    CaInProgress,
}

impl Renew {
    pub const ANNOTATION: &'static str = "lifeguard.dev/renew";

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "certificate" => Some(Self::Certificate),
            "ca" => Some(Self::Ca),
            "ca-in-progress" => Some(Self::CaInProgress),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Certificate => "certificate",
            Self::Ca => "ca",
            Self::CaInProgress => "ca-in-progress",
        }
    }
}

/// The Secret as far as the decision needs it; garbage was already left out by the parser.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredCerts {
    /// Every parseable certificate of `ca.crt`, in stored order.
    pub bundle: Vec<CaCert>,
    /// The bundle CA that `ca.key` belongs to; `None` when the key is missing, garbage or
    /// matches no certificate of the bundle.
    pub signing_ca: Option<CertId>,
    /// `tls.crt` with `tls.key`; `None` when missing, garbage or not a pair.
    pub leaf: Option<Leaf>,
    pub renew: Option<Renew>,
}

/// One of lifeguard's webhook configurations, as published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleState {
    pub name: String,
    /// The CAs of each webhook's `clientConfig.caBundle`; `None` when the configuration
    /// does not exist (the API server cannot call it, so it constrains nothing).
    pub webhooks: Option<Vec<Vec<CertId>>>,
}

impl BundleState {
    /// True when every webhook of the configuration trusts `ca`.
    pub fn trusts(&self, ca: &CertId) -> bool {
        self.webhooks
            .as_ref()
            .is_none_or(|webhooks| webhooks.iter().all(|bundle| bundle.contains(ca)))
    }

    /// True when some webhook of the configuration trusts `ca`.
    pub fn published(&self, ca: &CertId) -> bool {
        self.webhooks
            .as_ref()
            .is_some_and(|webhooks| webhooks.iter().any(|bundle| bundle.contains(ca)))
    }

    fn publishes_exactly(&self, bundle: &[CaCert]) -> bool {
        self.webhooks.as_ref().is_none_or(|webhooks| {
            webhooks.iter().all(|published| {
                published.len() == bundle.len()
                    && bundle.iter().all(|ca| published.contains(&ca.id))
            })
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// SANs the leaf must carry, in any order.
    pub dns_names: Vec<String>,
    /// How long a CA that signs no current leaf stays in the bundle after a leaf from
    /// another CA was issued: longer than every replica takes to load the new leaf.
    pub retire_grace: SignedDuration,
    /// How far `not_before` of a new leaf lies before its issue time (clock skew).
    pub backdate: SignedDuration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    Missing,
    Unusable,
    Expiring,
    Requested,
    NamesChanged,
    SignedByOldCa,
}

impl Reason {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Unusable => {
                "unusable (garbage, mismatched key, expired, or signed by no CA in ca.crt)"
            }
            Self::Expiring => "less than a third of its validity left",
            Self::Requested => "requested by the lifeguard.dev/renew annotation",
            Self::NamesChanged => "SANs differ from the service names",
            Self::SignedByOldCa => "signed by a CA that is no longer the signing CA",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// No Secret and no CA published yet (fresh install): create the Secret with a new CA
    /// and a leaf it signs.
    CreateAll,
    /// No Secret, but CAs are published (the Secret was deleted): create it with those CAs
    /// and a new signing CA, and no leaf, so replicas keep serving the leaf they have until
    /// the new CA is published and a leaf from it issued.
    CreateCa,
    /// Append a new CA to `ca.crt` and make it the signing CA (`ca.key`); `tls.crt` and
    /// `tls.key` stay, so the old leaf keeps serving. CAs currently published in a
    /// configuration but missing from `ca.crt` (a Secret overwritten with garbage) are
    /// carried over too: a replica may still serve a leaf one of them signed.
    RotateCa {
        reason: Reason,
    },
    /// Write `ca.crt` into every webhook's `caBundle` of these configurations.
    PublishBundle {
        configurations: Vec<String>,
    },
    /// A new leaf from the signing CA; clears a `certificate`/`ca-in-progress` request.
    IssueLeaf {
        reason: Reason,
    },
    /// Remove these CAs from `ca.crt` (expired, or retired past the grace period).
    DropCas {
        ids: Vec<CertId>,
    },
    /// A renewal request with nothing left to do: remove the annotation.
    ClearRenew,
    Nothing,
}

fn due(not_before: Timestamp, not_after: Timestamp, now: Timestamp) -> bool {
    let lifetime = not_after.duration_since(not_before);
    let left = not_after.duration_since(now);
    left < lifetime / 3
}

/// The next step; see the module documentation for the order and why.
pub fn next_action(
    secret: Option<&StoredCerts>,
    published: &[BundleState],
    now: Timestamp,
    policy: &Policy,
) -> Action {
    let Some(stored) = secret else {
        let anything_published = published.iter().any(|config| {
            config
                .webhooks
                .as_ref()
                .is_some_and(|webhooks| webhooks.iter().any(|bundle| !bundle.is_empty()))
        });
        return if anything_published {
            Action::CreateCa
        } else {
            Action::CreateAll
        };
    };
    let signing = stored
        .signing_ca
        .as_ref()
        .and_then(|id| stored.bundle.iter().find(|ca| &ca.id == id));

    // 1. A usable signing CA, before anything is signed with it.
    let Some(signing) = signing else {
        let reason = if stored.bundle.is_empty() {
            Reason::Missing
        } else {
            Reason::Unusable
        };
        return Action::RotateCa { reason };
    };
    if due(signing.not_before, signing.not_after, now) {
        return Action::RotateCa {
            reason: Reason::Expiring,
        };
    }
    if stored.renew == Some(Renew::Ca) {
        return Action::RotateCa {
            reason: Reason::Requested,
        };
    }

    // 2. Every configuration trusts exactly the stored bundle (so also the signing CA).
    let stale: Vec<String> = published
        .iter()
        .filter(|config| !config.publishes_exactly(&stored.bundle))
        .map(|config| config.name.clone())
        .collect();
    if !stale.is_empty() {
        return Action::PublishBundle {
            configurations: stale,
        };
    }

    // 3. A leaf from the signing CA, for the right names, not due.
    let leaf_reason = match &stored.leaf {
        None => Some(Reason::Missing),
        Some(leaf) if leaf.signed_by.is_none() || leaf.not_after <= now => Some(Reason::Unusable),
        Some(leaf) if leaf.signed_by.as_ref() != Some(&signing.id) => Some(Reason::SignedByOldCa),
        Some(leaf) if !same_names(&leaf.dns_names, &policy.dns_names) => Some(Reason::NamesChanged),
        Some(leaf) if due(leaf.not_before, leaf.not_after, now) => Some(Reason::Expiring),
        Some(_) if stored.renew == Some(Renew::Certificate) => Some(Reason::Requested),
        Some(_) => None,
    };
    if let Some(reason) = leaf_reason {
        return Action::IssueLeaf { reason };
    }

    // 4. CAs no served leaf can need any more.
    let leaf_signer = stored.leaf.as_ref().and_then(|l| l.signed_by.as_ref());
    let leaf_issued = stored.leaf.as_ref().map(|l| l.not_before + policy.backdate);
    let retired =
        leaf_issued.is_some_and(|issued| now.duration_since(issued) >= policy.retire_grace);
    let drop: Vec<CertId> = stored
        .bundle
        .iter()
        .filter(|ca| ca.id != signing.id && Some(&ca.id) != leaf_signer)
        .filter(|ca| ca.not_after <= now || retired)
        .map(|ca| ca.id.clone())
        .collect();
    if !drop.is_empty() {
        return Action::DropCas { ids: drop };
    }

    if stored.renew.is_some() {
        return Action::ClearRenew;
    }
    Action::Nothing
}

fn same_names(have: &[String], want: &[String]) -> bool {
    let mut have: Vec<&str> = have.iter().map(String::as_str).collect();
    let mut want: Vec<&str> = want.iter().map(String::as_str).collect();
    have.sort_unstable();
    have.dedup();
    want.sort_unstable();
    want.dedup();
    have == want
}

#[cfg(test)]
#[path = "rotation_tests.rs"]
mod rotation_tests;
