use base64::Engine as _;

use super::*;
use crate::certgen::CA_CRT;

fn settings(every: Duration) -> Settings {
    Settings {
        secret: "lifeguard-webhook-tls".into(),
        namespace: "lifeguard-system".into(),
        service: "lifeguard-webhook".into(),
        configurations: vec!["lifeguard-validate".into(), "lifeguard-mutate".into()],
        validity: SignedDuration::from_hours(24),
        every,
    }
}

#[test]
fn an_old_ca_outlives_every_replica_s_next_check() {
    let cases = [
        (Duration::from_secs(60), SignedDuration::from_mins(5)),
        (Duration::from_secs(5), SignedDuration::from_secs(30)),
        (Duration::from_secs(1), SignedDuration::from_secs(30)),
    ];
    for (every, grace) in cases {
        assert_eq!(settings(every).policy().retire_grace, grace, "{every:?}");
    }
    assert_eq!(
        settings(Duration::from_secs(60)).policy().dns_names[2],
        "lifeguard-webhook.lifeguard-system.svc"
    );
}

fn object(webhooks: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "lifeguard-validate", "resourceVersion": "42"},
        "webhooks": webhooks,
    }))
    .expect("object")
}

#[test]
fn published_bundles_are_read_per_webhook_and_garbage_trusts_nothing() {
    let data = certgen::create_all(
        Timestamp::now(),
        SignedDuration::from_hours(24),
        &settings(Duration::from_secs(60)).policy().dns_names,
    )
    .expect("generated");
    let b64 = base64::engine::general_purpose::STANDARD;
    let config = object(json!([
        {"name": "a.lifeguard.dev", "clientConfig": {"caBundle": b64.encode(&data[CA_CRT])}},
        {"name": "b.lifeguard.dev", "clientConfig": {"caBundle": b64.encode("garbage")}},
        {"name": "c.lifeguard.dev", "clientConfig": {"caBundle": "%%not base64"}},
        {"name": "d.lifeguard.dev", "clientConfig": {}},
    ]));
    let published = published_state(Kind::Validating, "lifeguard-validate", &config);
    assert_eq!(published.resource_version, "42");
    assert_eq!(published.webhook_names.len(), 4);
    let counts: Vec<usize> = published.bundles.iter().map(Vec::len).collect();
    assert_eq!(counts, [1, 0, 0, 0]);
    assert_eq!(
        published.key(),
        "validatingwebhookconfiguration/lifeguard-validate"
    );
}

#[test]
fn the_bundle_patch_is_guarded_and_touches_only_ca_bundles() {
    let published = published_state(
        Kind::Mutating,
        "lifeguard-mutate",
        &object(json!([{"name": "a"}, {"name": "b"}])),
    );
    let patch = bundle_patch(&published, "PEM");
    let ops = patch.as_array().expect("array");
    assert_eq!(
        ops[0],
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": "42"}),
        "first op refuses a stale patch"
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode("PEM");
    assert_eq!(
        &ops[1..],
        &[
            json!({"op": "test", "path": "/webhooks/0/name", "value": "a"}),
            json!({"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": encoded}),
            json!({"op": "test", "path": "/webhooks/1/name", "value": "b"}),
            json!({"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": encoded}),
        ]
    );
    let parsed: Result<json_patch::Patch, _> = serde_json::from_value(patch);
    assert!(parsed.is_ok(), "a valid RFC 6902 patch");
}

#[test]
fn actions_are_described_without_dumping_certificates() {
    let text = describe(&Action::DropCas {
        ids: vec![crate::rotation::CertId(vec![0; 500])],
    });
    assert_eq!(text, "removing 1 retired or expired CA(s)");
}

#[test]
fn only_conflicts_are_re_planned_at_once() {
    let api = |code: u16, reason: &str| {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: reason.to_string(),
            message: "m".into(),
            ..kube::core::Status::default()
        }))
    };
    let cases = [
        (api(409, "Conflict"), true),
        (api(409, "AlreadyExists"), true),
        (api(403, "Forbidden"), false),
        (api(500, "InternalError"), false),
    ];
    for (error, conflict) in cases {
        let code = match &error {
            kube::Error::Api(status) => status.code,
            _ => 0,
        };
        let got = matches!(failed("create")(error), StepError::Conflict(_));
        assert_eq!(got, conflict, "HTTP {code}");
    }
}

#[test]
fn the_retire_grace_survives_absurd_intervals() {
    let grace = settings(Duration::MAX).policy().retire_grace;
    assert_eq!(grace, SignedDuration::MAX);
}
