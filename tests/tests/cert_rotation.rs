//! The webhook's own certificate management, as installed (`--manage-certificate`, two
//! replicas): after an install nobody touched, the Secret holds a CA and a serving
//! certificate and both webhook configurations trust that CA; a forced renewal of the
//! serving certificate, and a forced rotation of the CA itself, under continuous
//! admissions through the API server, fail no admission.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use lifeguard_e2e::{
    Admissions, Component, LIFEGUARD_NAMESPACE, apply_crds, metric_sum, poll_until, with_namespace,
};
use serde_json::json;

const SECRET: &str = "lifeguard-webhook-tls";
const RENEW_ANNOTATION: &str = "lifeguard.dev/renew";

fn pem_count(pem: &[u8]) -> usize {
    String::from_utf8_lossy(pem)
        .matches("-----BEGIN CERTIFICATE-----")
        .count()
}

async fn secret(client: &Client) -> anyhow::Result<Secret> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    Ok(secrets.get(SECRET).await?)
}

fn key(secret: &Secret, name: &str) -> Vec<u8> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(name))
        .map(|b| b.0.clone())
        .unwrap_or_default()
}

/// The caBundle of every lifeguard webhook, as the API server will use it.
async fn published_bundles(client: &Client) -> anyhow::Result<Vec<Vec<u8>>> {
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let mut bundles = Vec::new();
    for w in validating
        .get("lifeguard-validate")
        .await?
        .webhooks
        .unwrap_or_default()
    {
        bundles.push(w.client_config.ca_bundle.map(|b| b.0).unwrap_or_default());
    }
    for w in mutating
        .get("lifeguard-mutate")
        .await?
        .webhooks
        .unwrap_or_default()
    {
        bundles.push(w.client_config.ca_bundle.map(|b| b.0).unwrap_or_default());
    }
    Ok(bundles)
}

/// The serial of the certificate a new TLS connection to the webhook's Service gets.
async fn served_serial(client: &Client) -> anyhow::Result<String> {
    let services: Api<Service> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let ip = services
        .get("lifeguard-webhook")
        .await?
        .spec
        .and_then(|s| s.cluster_ip)
        .context("the webhook Service has no cluster IP")?;
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl s_client -connect {ip}:443 -servername lifeguard-webhook.lifeguard-system.svc </dev/null 2>/dev/null | openssl x509 -noout -serial"
        ))
        .output()?;
    ensure!(out.status.success(), "cannot read the served certificate");
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

async fn renewals(client: &Client, kind: &str) -> anyhow::Result<f64> {
    metric_sum(
        client,
        Component::Webhook,
        &format!("lifeguard_webhook_certificate_renewals_total{{kind=\"{kind}\"}}"),
    )
    .await
}

async fn request_renewal(client: &Client, what: &str) -> anyhow::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    secrets
        .patch(
            SECRET,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {RENEW_ANNOTATION: what}}})),
        )
        .await?;
    Ok(())
}

#[tokio::test]
async fn the_installed_webhook_made_its_own_certificate_and_trusts_it() -> anyhow::Result<()> {
    let client = lifeguard_e2e::client().await?;
    let stored = secret(&client).await?;
    for name in ["tls.crt", "tls.key", "ca.crt", "ca.key"] {
        ensure!(!key(&stored, name).is_empty(), "the Secret holds {name}");
    }
    let ca = key(&stored, "ca.crt");
    let bundles = published_bundles(&client).await?;
    ensure!(bundles.len() >= 3, "every lifeguard webhook is registered");
    for bundle in &bundles {
        ensure!(*bundle == ca, "each caBundle is the Secret's ca.crt");
    }
    Ok(())
}

#[tokio::test]
async fn forced_renewals_under_continuous_admissions_fail_no_admission() {
    with_namespace("rotation", |client, ns| async move {
        apply_crds(&client).await?;
        let load = Admissions::start(&client, &ns, 4);
        let outcome = rotate(&client).await;
        let (total, failures) = load.finish().await?;
        outcome?;
        assert!(total > 100, "traffic kept flowing: only {total} admissions");
        assert!(
            failures.is_empty(),
            "{} of {total} admissions failed: {:?}",
            failures.len(),
            &failures[..failures.len().min(5)]
        );
        Ok(())
    })
    .await;
}

/// A leaf renewal, then a CA rotation, each waited for through what users can see.
async fn rotate(client: &Client) -> anyhow::Result<()> {
    let client = &client.clone();
    let before = secret(client).await?;
    let (leaf_before, ca_before) = (key(&before, "tls.crt"), key(&before, "ca.crt"));
    let serial_before = served_serial(client).await?;
    let leaf_renewals = renewals(client, "leaf").await?;

    request_renewal(client, "certificate").await?;
    let leaf_before = &leaf_before;
    poll_until(
        "a new serving certificate from the same CA",
        Duration::from_secs(60),
        || async move {
            let s = secret(client).await?;
            let done = !s.annotations().contains_key(RENEW_ANNOTATION)
                && key(&s, "tls.crt") != *leaf_before;
            Ok(done.then_some(()))
        },
    )
    .await?;
    ensure!(
        key(&secret(client).await?, "ca.crt") == ca_before,
        "a leaf renewal keeps the CA"
    );
    let serial_before = &serial_before;
    poll_until(
        "new connections get the new certificate",
        Duration::from_secs(30),
        || async move { Ok((served_serial(client).await? != *serial_before).then_some(())) },
    )
    .await?;
    ensure!(
        renewals(client, "leaf").await? >= leaf_renewals + 1.0,
        "the leaf renewal is counted"
    );

    let ca_renewals = renewals(client, "ca").await?;
    request_renewal(client, "ca").await?;
    let ca_before = &ca_before;
    // The safe sequence: the new CA is published beside the old, a leaf from it is served,
    // then (after a grace period) the old CA is dropped.
    poll_until(
        "the old CA retired after a CA rotation",
        Duration::from_secs(150),
        || async move {
            let s = secret(client).await?;
            let ca = key(&s, "ca.crt");
            let done = !s.annotations().contains_key(RENEW_ANNOTATION)
                && ca != *ca_before
                && pem_count(&ca) == 1
                && published_bundles(client).await?.iter().all(|b| *b == ca);
            Ok(done.then_some(()))
        },
    )
    .await?;
    ensure!(
        renewals(client, "ca").await? >= ca_renewals + 1.0,
        "the CA rotation is counted"
    );
    Ok(())
}
