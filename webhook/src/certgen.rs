//! Certificate material of the managed mode: generating a CA and leaves (rcgen), and
//! reading what a Secret or a `caBundle` holds into the plain state `rotation` decides on.
//!
//! Parsing uses x509-parser (rusticata, maintained, no RUSTSEC advisory): rcgen needs it
//! anyway to rebuild an `Issuer` from the stored CA certificate, and it exposes what webpki
//! keeps private: `notAfter`, the SANs, and signature checks against a chosen CA key.
//! webpki would answer only "valid for this name now", not "how long is left".

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData as _,
};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

use crate::rotation::{CaCert, CertId, Leaf, Renew, StoredCerts};

/// Secret keys; `tls.crt`, `tls.key` and `ca.crt` are the ones cert-manager writes.
pub const TLS_CRT: &str = "tls.crt";
pub const TLS_KEY: &str = "tls.key";
pub const CA_CRT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";

/// `notBefore` lies this far before issue time, so a node whose clock is a little behind
/// still accepts a certificate issued a moment ago.
pub const BACKDATE: SignedDuration = SignedDuration::from_mins(5);

#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("generating certificate material: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("time out of range for a certificate: {0}")]
    Time(String),
    #[error("the signing CA cannot be used: {0}")]
    SigningCa(String),
}

/// Secret data, key to bytes.
pub type SecretData = BTreeMap<String, Vec<u8>>;

fn offset_time(t: Timestamp) -> Result<time::OffsetDateTime, GenError> {
    time::OffsetDateTime::from_unix_timestamp(t.as_second())
        .map_err(|e| GenError::Time(e.to_string()))
}

fn timestamp(t: x509_parser::time::ASN1Time) -> Option<Timestamp> {
    Timestamp::from_second(t.timestamp()).ok()
}

/// `now + validity`, refused instead of overflowing for absurd validities.
fn later(now: Timestamp, validity: SignedDuration) -> Result<Timestamp, GenError> {
    now.checked_add(validity)
        .map_err(|e| GenError::Time(format!("{validity:#} from {now}: {e}")))
}

/// The CA's lifetime for a leaf `validity`; an error when it cannot be expressed, so the
/// flag can be refused at start.
pub fn ca_validity(validity: SignedDuration) -> Result<SignedDuration, GenError> {
    let ca = validity
        .checked_mul(CA_VALIDITY_FACTOR)
        .ok_or_else(|| GenError::Time(format!("{validity:#} times {CA_VALIDITY_FACTOR}")))?;
    // X.509 times end with the year 9999; jiff's range ends there too.
    later(Timestamp::now(), ca)?;
    Ok(ca)
}

/// PEM of certificates, in order.
pub fn pem_certificates(ders: &[&[u8]]) -> String {
    use base64::Engine as _;
    let mut out = String::new();
    for der in ders {
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in body.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

/// The DER of every well-formed PEM certificate in `pem`, skipping garbage blocks.
pub fn der_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .map(|der| der.as_ref().to_vec())
        .collect()
}

/// A CA certificate of a bundle, with its DER; `None` when it does not parse or is no CA.
fn parse_ca(der: &[u8]) -> Option<CaCert> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    if !cert.is_ca() {
        return None;
    }
    Some(CaCert {
        id: CertId(der.to_vec()),
        not_before: timestamp(cert.validity().not_before)?,
        not_after: timestamp(cert.validity().not_after)?,
    })
}

/// The CAs of a `caBundle` or `ca.crt`; what does not parse is left out.
pub fn bundle_cas(pem: &[u8]) -> Vec<CaCert> {
    der_certificates(pem)
        .iter()
        .filter_map(|der| parse_ca(der))
        .collect()
}

/// Generated certificate and key, PEM.
#[derive(Debug, Clone)]
pub struct Generated {
    pub cert_pem: String,
    pub key_pem: String,
}

/// A self-signed X.509 v3 CA, valid from `now` (less [`BACKDATE`]) for `validity`.
pub fn new_ca(now: Timestamp, validity: SignedDuration) -> Result<Generated, GenError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    // The issue time in the name keeps successive CAs apart for clients that build
    // chains by name.
    name.push(
        DnType::CommonName,
        format!("lifeguard-webhook-ca-{}", now.as_second()),
    );
    name.push(DnType::OrganizationName, "lifeguard");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = offset_time(now - BACKDATE)?;
    params.not_after = offset_time(later(now, validity)?)?;
    let cert = params.self_signed(&key)?;
    Ok(Generated {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A serving certificate for `dns_names`, signed by the CA `ca_der` whose key is
/// `ca_key_pem`; it never outlives the CA.
pub fn issue_leaf(
    ca_der: &[u8],
    ca_key_pem: &str,
    dns_names: &[String],
    now: Timestamp,
    validity: SignedDuration,
) -> Result<Generated, GenError> {
    let ca = parse_ca(ca_der).ok_or_else(|| GenError::SigningCa("not a CA certificate".into()))?;
    let ca_key = KeyPair::from_pem(ca_key_pem)?;
    let issuer = Issuer::from_ca_cert_der(&CertificateDer::from(ca_der), ca_key)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(dns_names.to_vec())?;
    let mut name = DistinguishedName::new();
    if let Some(first) = dns_names.first() {
        name.push(DnType::CommonName, first.as_str());
    }
    params.distinguished_name = name;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = offset_time(now - BACKDATE)?;
    params.not_after = offset_time(later(now, validity)?.min(ca.not_after))?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Generated {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// True when the private key `key_pem` belongs to `cert`.
fn key_matches(key_pem: &[u8], cert: &X509Certificate<'_>) -> Result<(), String> {
    let text = std::str::from_utf8(key_pem).map_err(|_| "not UTF-8 PEM".to_string())?;
    let key = KeyPair::from_pem(text).map_err(|e| e.to_string())?;
    if key.subject_public_key_info() == cert.public_key().raw {
        Ok(())
    } else {
        Err("belongs to another certificate".to_string())
    }
}

/// What a Secret holds, for `rotation::next_action`, and what was wrong with it.
#[derive(Debug, Clone, Default)]
pub struct Inspected {
    pub stored: StoredCerts,
    /// One line per unusable item, for the log.
    pub problems: Vec<String>,
}

/// Reads Secret data; never fails: garbage becomes an absent item and a problem line.
pub fn inspect(data: &SecretData, renew: Option<&str>) -> Inspected {
    let mut problems = Vec::new();
    let empty = Vec::new();
    let get = |key: &str| data.get(key).unwrap_or(&empty);

    let ca_ders = der_certificates(get(CA_CRT));
    let bundle: Vec<CaCert> = ca_ders.iter().filter_map(|der| parse_ca(der)).collect();
    if bundle.len() < ca_ders.len() {
        problems.push(format!(
            "{CA_CRT}: {} of {} certificates are not usable CA certificates",
            ca_ders.len() - bundle.len(),
            ca_ders.len()
        ));
    }
    if bundle.is_empty() {
        problems.push(format!("{CA_CRT}: no CA certificate"));
    }

    let mut signing_ca = None;
    for ca in &bundle {
        if let Ok((_, cert)) = x509_parser::parse_x509_certificate(&ca.id.0)
            && key_matches(get(CA_KEY), &cert).is_ok()
        {
            signing_ca = Some(ca.id.clone());
        }
    }
    if signing_ca.is_none() && !bundle.is_empty() {
        problems.push(format!(
            "{CA_KEY}: missing, garbage, or the key of no certificate in {CA_CRT}"
        ));
    }

    let leaf = match read_leaf(get(TLS_CRT), get(TLS_KEY), &bundle) {
        Ok(leaf) => Some(leaf),
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    if let Some(leaf) = &leaf
        && leaf.signed_by.is_none()
    {
        problems.push(format!("{TLS_CRT}: signed by no CA of {CA_CRT}"));
    }

    let renew = match renew {
        None => None,
        Some(value) => {
            let parsed = Renew::parse(value);
            if parsed.is_none() {
                problems.push(format!(
                    "annotation {}={value:?} ignored: use \"certificate\" or \"ca\"",
                    Renew::ANNOTATION
                ));
            }
            parsed
        }
    };
    Inspected {
        stored: StoredCerts {
            bundle,
            signing_ca,
            leaf,
            renew,
        },
        problems,
    }
}

fn read_leaf(cert_pem: &[u8], key_pem: &[u8], bundle: &[CaCert]) -> Result<Leaf, String> {
    let der = der_certificates(cert_pem)
        .into_iter()
        .next()
        .ok_or_else(|| format!("{TLS_CRT}: no PEM certificate"))?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| format!("{TLS_CRT}: not an X.509 certificate: {e}"))?;
    key_matches(key_pem, &cert).map_err(|e| format!("{TLS_KEY}: {e}"))?;
    let validity = cert.validity();
    let (Some(not_before), Some(not_after)) = (
        timestamp(validity.not_before),
        timestamp(validity.not_after),
    ) else {
        return Err(format!("{TLS_CRT}: validity out of range"));
    };
    let signed_by = bundle.iter().find_map(|ca| {
        let (_, ca_cert) = x509_parser::parse_x509_certificate(&ca.id.0).ok()?;
        cert.verify_signature(Some(ca_cert.public_key()))
            .ok()
            .map(|()| ca.id.clone())
    });
    let dns_names = match cert.subject_alternative_name() {
        Ok(Some(san)) => san
            .value
            .general_names
            .iter()
            .filter_map(|name| match name {
                GeneralName::DNSName(dns) => Some(dns.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Leaf {
        signed_by,
        not_before,
        not_after,
        dns_names,
    })
}

/// A new Secret's data: a CA and a leaf it signs.
pub fn create_all(
    now: Timestamp,
    validity: SignedDuration,
    dns_names: &[String],
) -> Result<SecretData, GenError> {
    let ca = new_ca(now, ca_validity(validity)?)?;
    let ca_der = der_certificates(ca.cert_pem.as_bytes())
        .into_iter()
        .next()
        .ok_or_else(|| GenError::SigningCa("generated CA has no PEM".into()))?;
    let leaf = issue_leaf(&ca_der, &ca.key_pem, dns_names, now, validity)?;
    Ok(SecretData::from([
        (CA_CRT.to_string(), ca.cert_pem.into_bytes()),
        (CA_KEY.to_string(), ca.key_pem.into_bytes()),
        (TLS_CRT.to_string(), leaf.cert_pem.into_bytes()),
        (TLS_KEY.to_string(), leaf.key_pem.into_bytes()),
    ]))
}

/// The CA lives this many times as long as the leaf, so it is rotated far less often.
pub const CA_VALIDITY_FACTOR: i32 = 10;

/// `data` with a new signing CA appended to `ca.crt` (after the unexpired CAs already
/// there and those in `carry_over`, the CAs currently published); `tls.*` untouched.
pub fn with_new_ca(
    data: &SecretData,
    carry_over: &[CaCert],
    now: Timestamp,
    validity: SignedDuration,
) -> Result<SecretData, GenError> {
    let ca = new_ca(now, ca_validity(validity)?)?;
    let mut keep: Vec<CaCert> = bundle_cas(data.get(CA_CRT).map_or(&[][..], Vec::as_slice));
    for ca in carry_over {
        if !keep.iter().any(|kept| kept.id == ca.id) {
            keep.push(ca.clone());
        }
    }
    keep.retain(|ca| ca.not_after > now);
    let mut bundle =
        pem_certificates(&keep.iter().map(|ca| ca.id.0.as_slice()).collect::<Vec<_>>());
    bundle.push_str(&ca.cert_pem);
    let mut data = data.clone();
    data.insert(CA_CRT.to_string(), bundle.into_bytes());
    data.insert(CA_KEY.to_string(), ca.key_pem.into_bytes());
    Ok(data)
}

/// A new Secret's data when CAs are already published: those CAs and a new signing CA,
/// no leaf yet.
pub fn create_ca(
    carry_over: &[CaCert],
    now: Timestamp,
    validity: SignedDuration,
) -> Result<SecretData, GenError> {
    with_new_ca(&SecretData::new(), carry_over, now, validity)
}

/// `data` with a new leaf from its signing CA.
pub fn with_new_leaf(
    data: &SecretData,
    dns_names: &[String],
    now: Timestamp,
    validity: SignedDuration,
) -> Result<SecretData, GenError> {
    let inspected = inspect(data, None);
    let signing = inspected
        .stored
        .signing_ca
        .ok_or_else(|| GenError::SigningCa(format!("{CA_KEY} matches no CA of {CA_CRT}")))?;
    let key = std::str::from_utf8(data.get(CA_KEY).map_or(&[][..], Vec::as_slice))
        .map_err(|_| GenError::SigningCa(format!("{CA_KEY} is not UTF-8 PEM")))?;
    let leaf = issue_leaf(&signing.0, key, dns_names, now, validity)?;
    let mut data = data.clone();
    data.insert(TLS_CRT.to_string(), leaf.cert_pem.into_bytes());
    data.insert(TLS_KEY.to_string(), leaf.key_pem.into_bytes());
    Ok(data)
}

/// `data` with these CAs removed from `ca.crt` (garbage blocks go too).
pub fn without_cas(data: &SecretData, drop: &[CertId]) -> SecretData {
    let keep: Vec<Vec<u8>> = bundle_cas(data.get(CA_CRT).map_or(&[][..], Vec::as_slice))
        .into_iter()
        .filter(|ca| !drop.contains(&ca.id))
        .map(|ca| ca.id.0)
        .collect();
    let mut data = data.clone();
    data.insert(
        CA_CRT.to_string(),
        pem_certificates(&keep.iter().map(Vec::as_slice).collect::<Vec<_>>()).into_bytes(),
    );
    data
}

/// The four service names the API server may use for the webhook Service.
pub fn service_dns_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

#[cfg(test)]
#[path = "certgen_tests.rs"]
mod certgen_tests;
