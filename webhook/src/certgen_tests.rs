use std::sync::Arc;

use proptest::prelude::*;
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier as _;
use rustls_pki_types::{ServerName, UnixTime};
use x509_parser::x509::X509Version;

use super::*;
use crate::rotation::{BundleState, Policy, next_action};

const YEAR: SignedDuration = SignedDuration::from_hours(24 * 365);

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("in range")
}

fn names() -> Vec<String> {
    service_dns_names("lifeguard-webhook", "lifeguard-system")
}

fn first_der(pem: &[u8]) -> Vec<u8> {
    der_certificates(pem)
        .into_iter()
        .next()
        .expect("one certificate")
}

/// What a TLS client (the API server) does: verify the chain to `ca` and the name.
fn verify(leaf_pem: &[u8], ca_pems: &[&[u8]], name: &str, at: Timestamp) -> Result<(), String> {
    let mut roots = RootCertStore::empty();
    for ca in ca_pems {
        for der in der_certificates(ca) {
            roots
                .add(CertificateDer::from(der))
                .map_err(|e| e.to_string())?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| e.to_string())?;
    let leaf = CertificateDer::from(first_der(leaf_pem));
    let server = ServerName::try_from(name.to_string()).map_err(|e| e.to_string())?;
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        u64::try_from(at.as_second()).map_err(|e| e.to_string())?,
    ));
    verifier
        .verify_server_cert(&leaf, &[], &server, &[], time)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn generated_ca_and_leaf_are_v3_with_the_service_names_and_verify() {
    let data = create_all(now(), YEAR, &names()).expect("generated");
    let ca_der = first_der(&data[CA_CRT]);
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).expect("CA parses");
    assert_eq!(ca.version(), X509Version::V3);
    assert!(ca.is_ca());
    let ca_life = ca.validity().not_after.timestamp() - ca.validity().not_before.timestamp();
    assert_eq!(
        ca_life,
        10 * YEAR.as_secs() + BACKDATE.as_secs(),
        "CA lives 10x the leaf"
    );

    let leaf_der = first_der(&data[TLS_CRT]);
    let (_, leaf) = x509_parser::parse_x509_certificate(&leaf_der).expect("leaf parses");
    assert_eq!(leaf.version(), X509Version::V3);
    assert!(!leaf.is_ca());
    let san = leaf
        .subject_alternative_name()
        .expect("SAN well-formed")
        .expect("SAN present");
    let dns: Vec<String> = san
        .value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(d) => Some(d.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        dns,
        [
            "lifeguard-webhook",
            "lifeguard-webhook.lifeguard-system",
            "lifeguard-webhook.lifeguard-system.svc",
            "lifeguard-webhook.lifeguard-system.svc.cluster.local",
        ]
    );
    assert_eq!(
        leaf.validity().not_after.timestamp(),
        (now() + YEAR).as_second()
    );

    let soon = now() + SignedDuration::from_mins(1);
    for name in &names() {
        verify(&data[TLS_CRT], &[&data[CA_CRT]], name, soon)
            .unwrap_or_else(|e| panic!("{name} must verify: {e}"));
    }
    assert!(
        verify(
            &data[TLS_CRT],
            &[&data[CA_CRT]],
            "other.lifeguard-system.svc",
            soon
        )
        .is_err(),
        "a name not in the SANs must not verify"
    );
    let other = create_all(now(), YEAR, &names()).expect("generated");
    assert!(
        verify(&data[TLS_CRT], &[&other[CA_CRT]], &names()[2], soon).is_err(),
        "another CA must not verify the leaf"
    );
    assert!(
        verify(
            &data[TLS_CRT],
            &[&data[CA_CRT]],
            &names()[2],
            now() + YEAR + YEAR
        )
        .is_err(),
        "an expired leaf must not verify"
    );
}

#[test]
fn a_leaf_never_outlives_its_ca() {
    let ca = new_ca(now(), SignedDuration::from_hours(2)).expect("CA");
    let leaf = issue_leaf(
        &first_der(ca.cert_pem.as_bytes()),
        &ca.key_pem,
        &names(),
        now(),
        YEAR,
    )
    .expect("leaf");
    let der = first_der(leaf.cert_pem.as_bytes());
    let (_, parsed) = x509_parser::parse_x509_certificate(&der).expect("leaf parses");
    assert_eq!(
        parsed.validity().not_after.timestamp(),
        now().as_second() + 2 * 3600
    );
}

#[test]
fn a_fresh_secret_reads_back_as_healthy_and_needs_only_publishing() {
    let data = create_all(now(), YEAR, &names()).expect("generated");
    let inspected = inspect(&data, None);
    assert!(inspected.problems.is_empty(), "{:?}", inspected.problems);
    let stored = &inspected.stored;
    assert_eq!(stored.bundle.len(), 1);
    assert_eq!(stored.signing_ca.as_ref(), Some(&stored.bundle[0].id));
    let leaf = stored.leaf.as_ref().expect("leaf read");
    assert_eq!(leaf.signed_by.as_ref(), Some(&stored.bundle[0].id));

    let policy = Policy {
        dns_names: names(),
        retire_grace: SignedDuration::from_mins(10),
        backdate: BACKDATE,
    };
    let published = |ids: Vec<crate::rotation::CertId>| BundleState {
        name: "lifeguard-validate".into(),
        webhooks: Some(vec![ids]),
    };
    assert_eq!(
        next_action(Some(stored), &[published(vec![])], now(), &policy),
        crate::rotation::Action::PublishBundle {
            configurations: vec!["lifeguard-validate".into()]
        }
    );
    let ids = bundle_cas(&data[CA_CRT])
        .into_iter()
        .map(|ca| ca.id)
        .collect();
    assert_eq!(
        next_action(Some(stored), &[published(ids)], now(), &policy),
        crate::rotation::Action::Nothing
    );
}

#[test]
fn ca_rotation_keeps_the_old_leaf_valid_then_moves_it_then_drops_the_old_ca() {
    let old = create_all(now(), YEAR, &names()).expect("generated");
    let old_ca = bundle_cas(&old[CA_CRT]).remove(0);

    let rotated = with_new_ca(&old, &[], now(), YEAR).expect("rotated");
    assert_eq!(rotated[TLS_CRT], old[TLS_CRT], "the old leaf keeps serving");
    let stored = inspect(&rotated, None).stored;
    assert_eq!(stored.bundle.len(), 2);
    assert_eq!(
        stored.bundle[0].id, old_ca.id,
        "old CA first, still trusted"
    );
    assert_eq!(stored.signing_ca.as_ref(), Some(&stored.bundle[1].id));
    let leaf = stored.leaf.as_ref().expect("leaf");
    assert_eq!(leaf.signed_by.as_ref(), Some(&old_ca.id));
    let soon = now() + SignedDuration::from_mins(1);
    verify(&rotated[TLS_CRT], &[&rotated[CA_CRT]], &names()[2], soon)
        .expect("old leaf, new bundle");

    let reissued = with_new_leaf(&rotated, &names(), now(), YEAR).expect("reissued");
    let stored = inspect(&reissued, None).stored;
    let leaf = stored.leaf.as_ref().expect("leaf");
    assert_eq!(leaf.signed_by.as_ref(), Some(&stored.bundle[1].id));
    verify(&reissued[TLS_CRT], &[&rotated[CA_CRT]], &names()[2], soon).expect("new leaf, bundle");
    assert!(
        verify(&reissued[TLS_CRT], &[&old[CA_CRT]], &names()[2], soon).is_err(),
        "the new leaf needs the new CA"
    );

    let dropped = without_cas(&reissued, std::slice::from_ref(&old_ca.id));
    let stored = inspect(&dropped, None).stored;
    assert_eq!(stored.bundle.len(), 1);
    assert_ne!(stored.bundle[0].id, old_ca.id);
    assert!(stored.signing_ca.is_some() && stored.leaf.is_some());
}

#[test]
fn a_rotation_over_garbage_carries_over_the_published_ca() {
    let old = create_all(now(), YEAR, &names()).expect("generated");
    let published = bundle_cas(&old[CA_CRT]);
    let garbage = SecretData::from([(CA_CRT.to_string(), b"not a PEM".to_vec())]);
    let rotated = with_new_ca(&garbage, &published, now(), YEAR).expect("rotated");
    let stored = inspect(&rotated, None).stored;
    assert_eq!(stored.bundle.len(), 2);
    assert_eq!(stored.bundle[0].id, published[0].id);
}

#[test]
fn garbage_in_any_key_is_reported_and_left_out() {
    let good = create_all(now(), YEAR, &names()).expect("generated");
    let other = create_all(now(), YEAR, &names()).expect("generated");
    type Check = fn(&StoredCerts) -> bool;
    let cases: Vec<(&str, &str, Vec<u8>, Check)> = vec![
        ("ca.key garbage", CA_KEY, b"garbage".to_vec(), |s| {
            s.signing_ca.is_none() && s.bundle.len() == 1 && s.leaf.is_some()
        }),
        ("ca.key of another CA", CA_KEY, other[CA_KEY].clone(), |s| {
            s.signing_ca.is_none()
        }),
        (
            "tls.key of another leaf",
            TLS_KEY,
            other[TLS_KEY].clone(),
            |s| s.leaf.is_none() && s.signing_ca.is_some(),
        ),
        (
            "tls.crt garbage",
            TLS_CRT,
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
            |s| s.leaf.is_none(),
        ),
        (
            "tls.crt from another CA",
            TLS_CRT,
            other[TLS_CRT].clone(),
            |s| s.leaf.is_none(),
        ),
        ("ca.crt garbage", CA_CRT, vec![0xff, 0x00, 0x13], |s| {
            s.bundle.is_empty()
                && s.signing_ca.is_none()
                && s.leaf.as_ref().is_some_and(|l| l.signed_by.is_none())
        }),
        (
            "ca.crt holds a leaf, not a CA",
            CA_CRT,
            good[TLS_CRT].clone(),
            |s| s.bundle.is_empty(),
        ),
    ];
    for (name, key, value, check) in cases {
        let mut data = good.clone();
        data.insert(key.to_string(), value);
        let inspected = inspect(&data, None);
        assert!(check(&inspected.stored), "{name}: {:?}", inspected.stored);
        assert!(
            !inspected.problems.is_empty(),
            "{name}: a problem is reported"
        );
    }
    let empty = inspect(&SecretData::new(), None);
    assert_eq!(empty.stored, StoredCerts::default());
}

#[test]
fn renew_annotation_values() {
    let data = create_all(now(), YEAR, &names()).expect("generated");
    let cases = [
        (Some("certificate"), Some(Renew::Certificate), 0),
        (Some("ca"), Some(Renew::Ca), 0),
        (Some("ca-in-progress"), Some(Renew::CaInProgress), 0),
        (Some("leaf"), None, 1),
        (None, None, 0),
    ];
    for (value, want, problems) in cases {
        let inspected = inspect(&data, value);
        assert_eq!(inspected.stored.renew, want, "{value:?}");
        assert_eq!(inspected.problems.len(), problems, "{value:?}");
    }
}

proptest! {
    #[test]
    fn arbitrary_secret_bytes_never_panic(
        tls_crt in proptest::collection::vec(any::<u8>(), 0..300),
        ca_crt in proptest::collection::vec(any::<u8>(), 0..300),
        key in proptest::collection::vec(any::<u8>(), 0..300),
        annotation in ".{0,12}",
    ) {
        let mut pem_crt = b"-----BEGIN CERTIFICATE-----\n".to_vec();
        pem_crt.extend_from_slice(&tls_crt);
        let data = SecretData::from([
            (TLS_CRT.to_string(), pem_crt),
            (TLS_KEY.to_string(), key.clone()),
            (CA_CRT.to_string(), ca_crt),
            (CA_KEY.to_string(), key),
        ]);
        let inspected = inspect(&data, Some(&annotation));
        prop_assert!(inspected.stored.leaf.is_none());
    }
}

#[test]
fn absurd_validities_are_errors_not_panics() {
    let huge = SignedDuration::from_hours(24 * 365 * 2000);
    assert!(ca_validity(YEAR).is_ok());
    assert!(ca_validity(huge).is_err());
    assert!(ca_validity(SignedDuration::MAX).is_err());
    assert!(create_all(now(), huge, &names()).is_err());
    assert!(new_ca(now(), SignedDuration::MAX).is_err());
}
