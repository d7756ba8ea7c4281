use super::*;

const DAY: i64 = 86_400;
const NAMES: [&str; 2] = [
    "lifeguard-webhook.lifeguard-system.svc",
    "lifeguard-webhook",
];

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).expect("in range")
}

fn id(n: u8) -> CertId {
    CertId(vec![n])
}

fn policy() -> Policy {
    Policy {
        dns_names: NAMES.iter().map(|s| s.to_string()).collect(),
        retire_grace: SignedDuration::from_mins(10),
        backdate: SignedDuration::from_mins(5),
    }
}

fn ca(n: u8, from: i64, until: i64) -> CaCert {
    CaCert {
        id: id(n),
        not_before: at(from),
        not_after: at(until),
    }
}

fn leaf(signer: Option<u8>, from: i64, until: i64) -> Leaf {
    Leaf {
        signed_by: signer.map(id),
        not_before: at(from),
        not_after: at(until),
        dns_names: NAMES.iter().rev().map(|s| s.to_string()).collect(),
    }
}

fn config(name: &str, bundles: &[&[u8]]) -> BundleState {
    BundleState {
        name: name.to_string(),
        webhooks: Some(
            bundles
                .iter()
                .map(|b| b.iter().copied().map(id).collect())
                .collect(),
        ),
    }
}

fn missing(name: &str) -> BundleState {
    BundleState {
        name: name.to_string(),
        webhooks: None,
    }
}

/// CA 1 (valid for 3650 days from day 0) signing a one-year leaf issued on day 0.
fn healthy() -> StoredCerts {
    StoredCerts {
        bundle: vec![ca(1, 0, 3650 * DAY)],
        signing_ca: Some(id(1)),
        leaf: Some(leaf(Some(1), 0, 365 * DAY)),
        renew: None,
    }
}

fn with(f: impl FnOnce(&mut StoredCerts)) -> StoredCerts {
    let mut stored = healthy();
    f(&mut stored);
    stored
}

#[test]
fn next_action_table() {
    let both_trust_1 = vec![
        config("lifeguard-validate", &[&[1], &[1]]),
        config("lifeguard-mutate", &[&[1]]),
    ];
    let rotated = |s: &mut StoredCerts| {
        s.bundle.push(ca(2, 10 * DAY, 3660 * DAY));
        s.signing_ca = Some(id(2));
    };
    type Case = (
        &'static str,
        Option<StoredCerts>,
        Vec<BundleState>,
        i64,
        Action,
    );
    let cases: Vec<Case> = vec![
        (
            "no Secret but CAs published (Secret deleted): a CA only, the leaf comes later",
            None,
            both_trust_1.clone(),
            0,
            Action::CreateCa,
        ),
        (
            "no Secret and empty caBundles (fresh install): create everything",
            None,
            vec![
                config("lifeguard-validate", &[&[], &[]]),
                missing("lifeguard-mutate"),
            ],
            0,
            Action::CreateAll,
        ),
        (
            "healthy and published: nothing",
            Some(healthy()),
            both_trust_1.clone(),
            DAY,
            Action::Nothing,
        ),
        (
            "a configuration that does not exist constrains nothing",
            Some(healthy()),
            vec![
                config("lifeguard-validate", &[&[1]]),
                missing("lifeguard-mutate"),
            ],
            DAY,
            Action::Nothing,
        ),
        (
            "empty caBundle after install: publish to those configurations only",
            Some(healthy()),
            vec![
                config("lifeguard-validate", &[&[], &[1]]),
                config("lifeguard-mutate", &[&[1]]),
            ],
            DAY,
            Action::PublishBundle {
                configurations: vec!["lifeguard-validate".into()],
            },
        ),
        (
            "a published bundle with an extra CA is rewritten",
            Some(healthy()),
            vec![
                config("lifeguard-validate", &[&[1, 9]]),
                config("lifeguard-mutate", &[&[1]]),
            ],
            DAY,
            Action::PublishBundle {
                configurations: vec!["lifeguard-validate".into()],
            },
        ),
        (
            "garbage everywhere: start with a new CA",
            Some(StoredCerts::default()),
            both_trust_1.clone(),
            DAY,
            Action::RotateCa {
                reason: Reason::Missing,
            },
        ),
        (
            "ca.key matches no certificate: rotate the CA, keeping the old one trusted",
            Some(with(|s| s.signing_ca = None)),
            both_trust_1.clone(),
            DAY,
            Action::RotateCa {
                reason: Reason::Unusable,
            },
        ),
        (
            "CA with less than a third of its life left: rotate",
            Some(healthy()),
            both_trust_1.clone(),
            2434 * DAY,
            Action::RotateCa {
                reason: Reason::Expiring,
            },
        ),
        (
            "operator asked for a CA rotation",
            Some(with(|s| s.renew = Some(Renew::Ca))),
            both_trust_1.clone(),
            DAY,
            Action::RotateCa {
                reason: Reason::Requested,
            },
        ),
        (
            "after a CA rotation the new CA is published before any leaf is issued",
            Some(with(rotated)),
            both_trust_1.clone(),
            10 * DAY,
            Action::PublishBundle {
                configurations: vec!["lifeguard-validate".into(), "lifeguard-mutate".into()],
            },
        ),
        (
            "once every configuration carries the new CA, the leaf moves to it",
            Some(with(rotated)),
            vec![
                config("lifeguard-validate", &[&[2, 1], &[1, 2]]),
                config("lifeguard-mutate", &[&[1, 2]]),
            ],
            10 * DAY,
            Action::IssueLeaf {
                reason: Reason::SignedByOldCa,
            },
        ),
        (
            "no leaf: issue one",
            Some(with(|s| s.leaf = None)),
            both_trust_1.clone(),
            DAY,
            Action::IssueLeaf {
                reason: Reason::Missing,
            },
        ),
        (
            "leaf signed by no bundle CA: issue one",
            Some(with(|s| s.leaf = Some(leaf(None, 0, 365 * DAY)))),
            both_trust_1.clone(),
            DAY,
            Action::IssueLeaf {
                reason: Reason::Unusable,
            },
        ),
        (
            "expired leaf: issue one",
            Some(healthy()),
            both_trust_1.clone(),
            400 * DAY,
            Action::IssueLeaf {
                reason: Reason::Unusable,
            },
        ),
        (
            "leaf with less than a third left: renew",
            Some(healthy()),
            both_trust_1.clone(),
            244 * DAY,
            Action::IssueLeaf {
                reason: Reason::Expiring,
            },
        ),
        (
            "leaf with just over a third left: keep",
            Some(healthy()),
            both_trust_1.clone(),
            243 * DAY,
            Action::Nothing,
        ),
        (
            "leaf for other service names: reissue",
            Some(with(|s| {
                if let Some(l) = s.leaf.as_mut() {
                    l.dns_names = vec!["old-name.lifeguard-system.svc".into()];
                }
            })),
            both_trust_1.clone(),
            DAY,
            Action::IssueLeaf {
                reason: Reason::NamesChanged,
            },
        ),
        (
            "operator asked for a new leaf",
            Some(with(|s| s.renew = Some(Renew::Certificate))),
            both_trust_1.clone(),
            DAY,
            Action::IssueLeaf {
                reason: Reason::Requested,
            },
        ),
        (
            "old CA stays while a replica may still serve a leaf it signed",
            Some(with(|s| {
                rotated(s);
                s.leaf = Some(leaf(Some(2), 10 * DAY, 375 * DAY));
            })),
            vec![
                config("lifeguard-validate", &[&[1, 2]]),
                config("lifeguard-mutate", &[&[1, 2]]),
            ],
            10 * DAY + 14 * 60,
            Action::Nothing,
        ),
        (
            "old CA leaves once the grace period has passed",
            Some(with(|s| {
                rotated(s);
                s.leaf = Some(leaf(Some(2), 10 * DAY, 375 * DAY));
            })),
            vec![
                config("lifeguard-validate", &[&[1, 2]]),
                config("lifeguard-mutate", &[&[1, 2]]),
            ],
            10 * DAY + 15 * 60,
            Action::DropCas { ids: vec![id(1)] },
        ),
        (
            "an expired CA that signs nothing leaves at once",
            Some(with(|s| {
                s.bundle.insert(0, ca(7, -20 * DAY, -DAY));
            })),
            vec![
                config("lifeguard-validate", &[&[7, 1]]),
                config("lifeguard-mutate", &[&[1, 7]]),
            ],
            0,
            Action::DropCas { ids: vec![id(7)] },
        ),
        (
            "rotation finished: the in-progress mark is removed",
            Some(with(|s| s.renew = Some(Renew::CaInProgress))),
            both_trust_1.clone(),
            DAY,
            Action::ClearRenew,
        ),
    ];
    for (name, stored, published, now, want) in cases {
        let got = next_action(stored.as_ref(), &published, at(now), &policy());
        assert_eq!(got, want, "{name}");
    }
}

/// Two replicas and two configurations, driven by `next_action` the way the manager loop
/// drives the real ones. Replica 0 serves the stored leaf at once (it wrote it); replica 1
/// loads it only on its periodic check, so it lags.
struct World {
    stored: Option<StoredCerts>,
    configs: Vec<BundleState>,
    served: [Option<Leaf>; 2],
    now: Timestamp,
    next_id: u8,
    /// Simulated time between two idle checks.
    idle: i64,
    /// Every CA ever made, to look up what a published bundle holds.
    all_cas: Vec<CaCert>,
    actions: Vec<Action>,
}

const CHECK: i64 = 60;
const LEAF_DAYS: i64 = 365;

impl World {
    fn fresh() -> Self {
        Self {
            stored: None,
            configs: vec![
                config("lifeguard-validate", &[&[], &[]]),
                config("lifeguard-mutate", &[&[]]),
            ],
            served: [None, None],
            now: at(0),
            next_id: 1,
            idle: CHECK,
            all_cas: Vec::new(),
            actions: Vec::new(),
        }
    }

    fn new_ca(&mut self) -> CaCert {
        let n = self.next_id;
        self.next_id += 1;
        let from = self.now.as_second() - at(0).as_second();
        let new = ca(n, from, from + 10 * LEAF_DAYS * DAY);
        self.all_cas.push(new.clone());
        new
    }

    fn new_leaf(&self, signer: &CertId) -> Leaf {
        let from = self.now.as_second() - at(0).as_second() - policy().backdate.as_secs();
        let mut l = leaf(None, from, from + LEAF_DAYS * DAY);
        l.signed_by = Some(signer.clone());
        l
    }

    fn everyone_trusts_what_is_served(&self) -> bool {
        self.served.iter().all(|served| {
            served.as_ref().is_some_and(|leaf| {
                leaf.signed_by
                    .as_ref()
                    .is_some_and(|ca| self.configs.iter().all(|c| c.trusts(ca)))
            })
        })
    }

    fn apply(&mut self, action: &Action) {
        match action {
            Action::CreateAll => {
                let ca = self.new_ca();
                let leaf = self.new_leaf(&ca.id);
                self.stored = Some(StoredCerts {
                    signing_ca: Some(ca.id.clone()),
                    bundle: vec![ca],
                    leaf: Some(leaf),
                    renew: None,
                });
            }
            Action::CreateCa => {
                self.stored = Some(StoredCerts::default());
                self.apply(&Action::RotateCa {
                    reason: Reason::Missing,
                });
            }
            Action::RotateCa { .. } => {
                let ca = self.new_ca();
                let now = self.now;
                let published: Vec<CaCert> = self
                    .all_cas
                    .iter()
                    .filter(|known| self.configs.iter().any(|c| c.published(&known.id)))
                    .cloned()
                    .collect();
                let stored = self.stored.as_mut().expect("rotation needs a Secret");
                for known in published {
                    if !stored.bundle.contains(&known) {
                        stored.bundle.push(known);
                    }
                }
                stored.bundle.retain(|old| old.not_after > now);
                stored.signing_ca = Some(ca.id.clone());
                stored.bundle.push(ca);
                if stored.renew == Some(Renew::Ca) {
                    stored.renew = Some(Renew::CaInProgress);
                }
            }
            Action::PublishBundle { configurations } => {
                let stored = self.stored.as_ref().expect("publishing needs a Secret");
                let ids: Vec<CertId> = stored.bundle.iter().map(|ca| ca.id.clone()).collect();
                for config in &mut self.configs {
                    if configurations.contains(&config.name)
                        && let Some(webhooks) = config.webhooks.as_mut()
                    {
                        webhooks.iter_mut().for_each(|w| *w = ids.clone());
                    }
                }
            }
            Action::IssueLeaf { .. } => {
                let stored = self.stored.as_ref().expect("issuing needs a Secret");
                let signer = stored.signing_ca.clone().expect("a signing CA");
                let leaf = self.new_leaf(&signer);
                let stored = self.stored.as_mut().expect("issuing needs a Secret");
                stored.leaf = Some(leaf);
                stored.renew = None;
            }
            Action::DropCas { ids } => {
                let stored = self.stored.as_mut().expect("dropping needs a Secret");
                stored.bundle.retain(|ca| !ids.contains(&ca.id));
            }
            Action::ClearRenew => {
                if let Some(stored) = self.stored.as_mut() {
                    stored.renew = None;
                }
            }
            Action::Nothing => {}
        }
    }

    /// Runs the loop for `seconds` of simulated time: steps one second apart while there
    /// is work, a check interval apart when idle. Asserts the invariant after each step.
    fn run(&mut self, seconds: i64) {
        let end = self.now + SignedDuration::from_secs(seconds);
        let mut trusted = self.everyone_trusts_what_is_served();
        while self.now < end {
            let action = next_action(self.stored.as_ref(), &self.configs, self.now, &policy());
            self.apply(&action);
            // A replica keeps what it serves while the Secret holds no usable leaf.
            let stored_leaf = self.stored.as_ref().and_then(|s| s.leaf.clone());
            if stored_leaf.is_some() {
                self.served[0] = stored_leaf.clone();
            }
            if action == Action::Nothing {
                self.now += SignedDuration::from_secs(self.idle);
                if stored_leaf.is_some() {
                    self.served[1] = stored_leaf;
                }
            } else {
                self.actions.push(action.clone());
                self.now += SignedDuration::from_secs(1);
                assert!(
                    self.actions.len() < 100,
                    "no convergence: {:?}",
                    self.actions
                );
            }
            let now_trusted = self.everyone_trusts_what_is_served();
            assert!(
                !trusted || now_trusted,
                "after {action:?} a served leaf is signed by a CA some caBundle lacks; \
                 configs {:?}, served {:?}",
                self.configs,
                self.served
            );
            trusted = now_trusted;
        }
    }

    fn take_actions(&mut self) -> Vec<&'static str> {
        self.actions
            .drain(..)
            .map(|a| match a {
                Action::CreateAll => "create",
                Action::CreateCa => "create-ca",
                Action::RotateCa { .. } => "rotate-ca",
                Action::PublishBundle { .. } => "publish",
                Action::IssueLeaf { .. } => "issue-leaf",
                Action::DropCas { .. } => "drop-cas",
                Action::ClearRenew => "clear-renew",
                Action::Nothing => "nothing",
            })
            .collect()
    }

    fn request(&mut self, renew: Renew) {
        if let Some(stored) = self.stored.as_mut() {
            stored.renew = Some(renew);
        }
    }
}

fn installed() -> World {
    let mut world = World::fresh();
    world.run(10 * CHECK);
    world.take_actions();
    world
}

#[test]
fn fresh_install_is_trusted_within_one_check_and_then_quiet() {
    let mut world = World::fresh();
    world.run(2 * CHECK);
    assert_eq!(world.take_actions(), ["create", "publish"]);
    assert!(world.everyone_trusts_what_is_served());
    world.run(30 * DAY);
    assert!(world.take_actions().is_empty(), "nothing to do for a month");
}

#[test]
fn forced_leaf_renewal_keeps_the_ca_and_clears_the_request() {
    let mut world = installed();
    let before = world.stored.clone().expect("installed");
    world.request(Renew::Certificate);
    world.run(30 * CHECK);
    assert_eq!(world.take_actions(), ["issue-leaf"]);
    let after = world.stored.clone().expect("installed");
    assert_eq!(after.bundle, before.bundle);
    assert_ne!(after.leaf, before.leaf);
    assert_eq!(after.renew, None);
}

#[test]
fn forced_ca_rotation_goes_through_the_safe_sequence() {
    let mut world = installed();
    let old_ca = world.stored.as_ref().and_then(|s| s.signing_ca.clone());
    world.request(Renew::Ca);
    world.run(CHECK);
    assert_eq!(world.take_actions(), ["rotate-ca", "publish", "issue-leaf"]);
    let stored = world.stored.clone().expect("installed");
    assert_eq!(
        stored.renew, None,
        "request cleared once the new leaf is issued"
    );
    assert_eq!(
        stored.bundle.len(),
        2,
        "old CA still trusted during the grace period"
    );
    world.run(60 * CHECK);
    assert_eq!(world.take_actions(), ["drop-cas", "publish"]);
    let stored = world.stored.clone().expect("installed");
    assert_eq!(stored.bundle.len(), 1);
    assert_ne!(Some(stored.bundle[0].id.clone()), old_ca);
    assert!(world.everyone_trusts_what_is_served());
}

#[test]
fn years_of_natural_expiry_renew_leaves_and_cas_without_a_gap() {
    let mut world = installed();
    // A day between checks keeps the run short; replica 1 still lags by one check.
    world.idle = DAY;
    world.run(8 * 365 * DAY);
    let actions = world.take_actions();
    let count = |name: &str| actions.iter().filter(|a| **a == name).count();
    assert!(
        count("issue-leaf") >= 10,
        "leaf renewed yearly: {actions:?}"
    );
    assert_eq!(
        count("rotate-ca"),
        1,
        "CA renewed once in 8 years: {actions:?}"
    );
    assert!(world.everyone_trusts_what_is_served());
}

#[test]
fn garbage_secret_recovers_through_a_new_ca_keeping_the_published_one() {
    let mut world = installed();
    world.stored = Some(StoredCerts::default());
    world.run(CHECK);
    assert_eq!(world.take_actions(), ["rotate-ca", "publish", "issue-leaf"]);
    world.run(60 * CHECK);
    assert_eq!(world.take_actions(), ["drop-cas", "publish"]);
    assert!(world.everyone_trusts_what_is_served());
}

#[test]
fn a_deleted_secret_is_recreated_without_distrusting_the_served_leaf() {
    let mut world = installed();
    world.stored = None;
    world.run(CHECK);
    assert_eq!(world.take_actions(), ["create-ca", "publish", "issue-leaf"]);
    world.run(60 * CHECK);
    assert_eq!(world.take_actions(), ["drop-cas", "publish"]);
    assert!(world.everyone_trusts_what_is_served());
}
