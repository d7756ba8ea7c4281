//! The I/O edge of the managed certificate (`--manage-certificate`): reads the Secret and
//! lifeguard's webhook configurations, asks `rotation::next_action`, carries out one step,
//! and reads again.
//!
//! Every replica runs this loop; nothing is elected. Two replicas never clobber each
//! other: the Secret is created with `create` (409: someone else made it, re-read) and
//! changed with `replace` carrying the `resourceVersion` that was read (409: re-read and
//! re-plan); configurations are changed by a JSON patch whose first op `test`s the
//! `resourceVersion` that was read, so a stale patch is refused as a whole.
//!
//! Serving: each check GETs the Secret and offers `tls.crt`/`tls.key` to the resolver.
//! A short poll rather than a watch: the GET is needed for planning anyway, there is no
//! stream to keep alive, and the lag it adds (one check interval) is covered by the
//! rotation order, which keeps an old CA trusted for `retire_grace` (5 intervals) after a
//! new leaf appears.

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::certgen::{self, SecretData, TLS_CRT, TLS_KEY};
use crate::certs::CertStore;
use crate::metrics::Metrics;
use crate::rotation::{Action, BundleState, CaCert, Policy, Renew, next_action};

/// Steps one check may take before waiting for the next (a full CA rotation needs three).
const MAX_STEPS: usize = 8;
/// Pause after writing a caBundle before signing with the CA it added: each API server
/// loads webhook configurations through its own informer, a moment after the write.
const PUBLISH_SETTLE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct Settings {
    pub secret: String,
    pub namespace: String,
    pub service: String,
    pub configurations: Vec<String>,
    pub validity: SignedDuration,
    pub every: Duration,
}

impl Settings {
    /// How long a replaced CA stays trusted after the first leaf from its successor:
    /// every replica re-reads the Secret each interval, so five intervals (at least 30 s)
    /// lets a replica miss four checks (API server unreachable) and still switch in time.
    /// Proportional to the interval so an e2e run with a short interval sees the whole
    /// rotation in seconds.
    pub fn policy(&self) -> Policy {
        let five = self
            .every
            .checked_mul(5)
            .and_then(|d| SignedDuration::try_from(d).ok())
            .unwrap_or(SignedDuration::MAX);
        Policy {
            dns_names: certgen::service_dns_names(&self.service, &self.namespace),
            retire_grace: five.max(SignedDuration::from_secs(30)),
            backdate: certgen::BACKDATE,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Validating,
    Mutating,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Self::Validating => "validatingwebhookconfiguration",
            Self::Mutating => "mutatingwebhookconfiguration",
        }
    }
}

/// One of lifeguard's webhook configurations as read.
struct Published {
    kind: Kind,
    name: String,
    resource_version: String,
    webhook_names: Vec<String>,
    bundles: Vec<Vec<CaCert>>,
}

impl Published {
    fn key(&self) -> String {
        format!("{}/{}", self.kind.label(), self.name)
    }
}

enum StepError {
    /// Someone else (usually the other replica) wrote first: re-read and re-plan.
    Conflict(String),
    Failed {
        step: &'static str,
        error: String,
    },
}

fn failed(step: &'static str) -> impl Fn(kube::Error) -> StepError {
    move |error| match &error {
        kube::Error::Api(status) if status.is_conflict() || status.is_already_exists() => {
            StepError::Conflict(format!("{step}: {}", status.message))
        }
        _ => StepError::Failed {
            step,
            error: error.to_string(),
        },
    }
}

fn gen_failed(step: &'static str) -> impl Fn(certgen::GenError) -> StepError {
    move |error| StepError::Failed {
        step,
        error: error.to_string(),
    }
}

fn secret_data(secret: &Secret) -> SecretData {
    secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect()
}

fn renew_annotation(secret: &Secret) -> Option<&str> {
    secret
        .metadata
        .annotations
        .as_ref()?
        .get(Renew::ANNOTATION)
        .map(String::as_str)
}

fn describe(action: &Action) -> String {
    match action {
        Action::CreateAll => "creating the Secret with a new CA and certificate".into(),
        Action::CreateCa => {
            "creating the Secret with the published CAs and a new CA (certificate follows)".into()
        }
        Action::RotateCa { reason } => format!("adding a new CA: {}", reason.as_str()),
        Action::PublishBundle { configurations } => {
            format!("writing caBundle into {}", configurations.join(", "))
        }
        Action::IssueLeaf { reason } => format!("issuing a new certificate: {}", reason.as_str()),
        Action::DropCas { ids } => format!("removing {} retired or expired CA(s)", ids.len()),
        Action::ClearRenew => format!("removing the finished {} request", Renew::ANNOTATION),
        Action::Nothing => "nothing to do".into(),
    }
}

pub struct Manager {
    secrets: Api<Secret>,
    validating: Api<DynamicObject>,
    mutating: Api<DynamicObject>,
    settings: Settings,
    policy: Policy,
    store: Arc<CertStore>,
    metrics: Metrics,
}

enum Step {
    Done,
    Again,
    AgainAfterPublish,
}

impl Manager {
    pub fn new(
        client: Client,
        settings: Settings,
        store: Arc<CertStore>,
        metrics: Metrics,
    ) -> Self {
        let validating = ApiResource::erase::<ValidatingWebhookConfiguration>(&());
        let mutating = ApiResource::erase::<MutatingWebhookConfiguration>(&());
        Self {
            secrets: Api::namespaced(client.clone(), &settings.namespace),
            validating: Api::all_with(client.clone(), &validating),
            mutating: Api::all_with(client, &mutating),
            policy: settings.policy(),
            settings,
            store,
            metrics,
        }
    }

    /// Checks every interval until the process ends; the first check runs at once.
    pub async fn run(self) {
        let mut tick = tokio::time::interval(self.settings.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.check().await;
        }
    }

    async fn check(&self) {
        for _ in 0..MAX_STEPS {
            match self.step().await {
                Ok(Step::Done) => {
                    // Nothing to do means every caBundle carries the stored leaf's CA.
                    if self.store.is_loaded() {
                        self.store.mark_trusted();
                    }
                    return;
                }
                Ok(Step::Again) => {}
                Ok(Step::AgainAfterPublish) => tokio::time::sleep(PUBLISH_SETTLE).await,
                Err(StepError::Conflict(what)) => {
                    tracing::info!(%what, "changed concurrently (another replica?); re-reading");
                }
                Err(StepError::Failed { step, error }) => {
                    self.metrics
                        .certificate_errors
                        .with_label_values(&[step])
                        .inc();
                    tracing::warn!(step, %error, "certificate management step failed; retrying next check");
                    return;
                }
            }
        }
        tracing::warn!(
            steps = MAX_STEPS,
            "certificate state not settled in one check; continuing next check"
        );
    }

    /// Offers the stored pair to the resolver; a broken pair keeps the previous one.
    fn serve(&self, data: &SecretData) {
        let (Some(cert), Some(key)) = (data.get(TLS_CRT), data.get(TLS_KEY)) else {
            return;
        };
        let origin = |key: &str| {
            format!(
                "Secret {}/{} {key}",
                self.settings.namespace, self.settings.secret
            )
        };
        match self
            .store
            .offer(cert, key, &origin(TLS_CRT), &origin(TLS_KEY))
        {
            Ok(false) => {}
            Ok(true) => {
                self.store.record(&self.metrics);
                tracing::info!(secret = %self.settings.secret, "serving certificate loaded from the Secret");
            }
            Err(error) => {
                self.metrics
                    .certificate_errors
                    .with_label_values(&["load"])
                    .inc();
                tracing::warn!(%error, "stored certificate not served; keeping the previous one");
            }
        }
    }

    async fn step(&self) -> Result<Step, StepError> {
        let secret = self
            .secrets
            .get_opt(&self.settings.secret)
            .await
            .map_err(failed("read"))?;
        let data = secret.as_ref().map(secret_data);
        let inspected = secret.as_ref().zip(data.as_ref()).map(|(secret, data)| {
            self.serve(data);
            certgen::inspect(data, renew_annotation(secret))
        });
        let published = self.read_published().await?;
        let states: Vec<BundleState> = self
            .settings
            .configurations
            .iter()
            .flat_map(|name| {
                let found: Vec<BundleState> = published
                    .iter()
                    .filter(|p| &p.name == name)
                    .map(|p| BundleState {
                        name: p.key(),
                        webhooks: Some(
                            p.bundles
                                .iter()
                                .map(|b| b.iter().map(|ca| ca.id.clone()).collect())
                                .collect(),
                        ),
                    })
                    .collect();
                if found.is_empty() {
                    vec![BundleState {
                        name: name.clone(),
                        webhooks: None,
                    }]
                } else {
                    found
                }
            })
            .collect();
        let stored = inspected.as_ref().map(|i| &i.stored);
        let now = Timestamp::now();
        if let Some(inspected) = &inspected {
            for problem in &inspected.problems {
                tracing::warn!(secret = %self.settings.secret, %problem, "stored certificate material not usable; what is needed is regenerated");
            }
        }
        let action = next_action(stored, &states, now, &self.policy);
        if action == Action::Nothing {
            return Ok(Step::Done);
        }
        tracing::info!(secret = %self.settings.secret, "{}", describe(&action));
        let carry: Vec<CaCert> = published
            .iter()
            .flat_map(|p| p.bundles.iter().flatten().cloned())
            .collect();
        let (secret, data, stored) = match (secret, data, stored) {
            (Some(secret), Some(data), Some(stored)) => (secret, data, stored),
            _ => {
                let data = if action == Action::CreateCa {
                    certgen::create_ca(&carry, now, self.settings.validity)
                } else {
                    certgen::create_all(now, self.settings.validity, &self.policy.dns_names)
                };
                self.create(data.map_err(gen_failed("create"))?).await?;
                return Ok(Step::Again);
            }
        };
        match action {
            Action::CreateAll | Action::CreateCa | Action::Nothing => Ok(Step::Again),
            Action::RotateCa { .. } => {
                let new = certgen::with_new_ca(&data, &carry, now, self.settings.validity)
                    .map_err(gen_failed("rotate-ca"))?;
                let renew = match stored.renew {
                    Some(Renew::Ca) => Some(Some(Renew::CaInProgress)),
                    _ => None,
                };
                self.replace(secret, new, renew, "rotate-ca").await?;
                self.metrics
                    .certificate_renewals
                    .with_label_values(&["ca"])
                    .inc();
                Ok(Step::Again)
            }
            Action::PublishBundle { configurations } => {
                let ders: Vec<&[u8]> = stored.bundle.iter().map(|ca| ca.id.0.as_slice()).collect();
                let pem = certgen::pem_certificates(&ders);
                for config in published
                    .iter()
                    .filter(|p| configurations.contains(&p.key()))
                {
                    self.publish(config, &pem).await?;
                }
                Ok(Step::AgainAfterPublish)
            }
            Action::IssueLeaf { .. } => {
                let new = certgen::with_new_leaf(
                    &data,
                    &self.policy.dns_names,
                    now,
                    self.settings.validity,
                )
                .map_err(gen_failed("issue-leaf"))?;
                let clear = stored.renew.map(|_| None);
                self.replace(secret, new.clone(), clear, "issue-leaf")
                    .await?;
                self.metrics
                    .certificate_renewals
                    .with_label_values(&["leaf"])
                    .inc();
                self.serve(&new);
                Ok(Step::Again)
            }
            Action::DropCas { ids } => {
                let new = certgen::without_cas(&data, &ids);
                self.replace(secret, new, None, "drop-cas").await?;
                Ok(Step::Again)
            }
            Action::ClearRenew => {
                self.replace(secret, data, Some(None), "clear-renew")
                    .await?;
                Ok(Step::Again)
            }
        }
    }

    async fn create(&self, data: SecretData) -> Result<(), StepError> {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.settings.secret.clone()),
                namespace: Some(self.settings.namespace.clone()),
                labels: Some(
                    [
                        ("app.kubernetes.io/name", "lifeguard-webhook"),
                        ("app.kubernetes.io/part-of", "lifeguard"),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".to_string()),
            data: Some(to_secret_data(&data)),
            ..Secret::default()
        };
        self.secrets
            .create(&PostParams::default(), &secret)
            .await
            .map_err(failed("create"))?;
        self.metrics
            .certificate_renewals
            .with_label_values(&["ca"])
            .inc();
        if data.contains_key(TLS_CRT) {
            self.metrics
                .certificate_renewals
                .with_label_values(&["leaf"])
                .inc();
            self.serve(&data);
        }
        Ok(())
    }

    /// Writes `data` (and, when given, the renew annotation: `Some(None)` removes it) with
    /// the `resourceVersion` that was read.
    async fn replace(
        &self,
        mut secret: Secret,
        data: SecretData,
        renew: Option<Option<Renew>>,
        step: &'static str,
    ) -> Result<(), StepError> {
        secret.data = Some(to_secret_data(&data));
        if let Some(renew) = renew {
            let annotations = secret.metadata.annotations.get_or_insert_default();
            match renew {
                Some(value) => {
                    annotations.insert(Renew::ANNOTATION.to_string(), value.as_str().to_string());
                }
                None => {
                    annotations.remove(Renew::ANNOTATION);
                }
            }
        }
        // Ignored by the API server on write; dropping it keeps the request small.
        secret.metadata.managed_fields = None;
        self.secrets
            .replace(&self.settings.secret, &PostParams::default(), &secret)
            .await
            .map_err(failed(step))?;
        Ok(())
    }

    async fn read_published(&self) -> Result<Vec<Published>, StepError> {
        let mut found = Vec::new();
        for name in &self.settings.configurations {
            for (kind, api) in [
                (Kind::Validating, &self.validating),
                (Kind::Mutating, &self.mutating),
            ] {
                let object = match api.get_opt(name).await {
                    Ok(object) => object,
                    // RBAC names each configuration for both kinds, but a cluster without
                    // one of them (or stricter RBAC) must not stop the others.
                    Err(kube::Error::Api(status)) if status.is_forbidden() => None,
                    Err(error) => return Err(failed("read")(error)),
                };
                if let Some(object) = object {
                    found.push(published_state(kind, name, &object));
                }
            }
        }
        Ok(found)
    }

    async fn publish(&self, config: &Published, pem: &str) -> Result<(), StepError> {
        let patch = bundle_patch(config, pem);
        let patch: json_patch::Patch =
            serde_json::from_value(patch).map_err(|e| StepError::Failed {
                step: "publish",
                error: e.to_string(),
            })?;
        let api = match config.kind {
            Kind::Validating => &self.validating,
            Kind::Mutating => &self.mutating,
        };
        match api
            .patch(
                &config.name,
                &PatchParams::default(),
                &Patch::Json::<()>(patch),
            )
            .await
        {
            Ok(_) => Ok(()),
            // A failed `test` op (the configuration changed since it was read) is a 422
            // from every API server since 1.12.
            Err(kube::Error::Api(status)) if status.code == 422 || status.is_conflict() => Err(
                StepError::Conflict(format!("publish {}: {}", config.key(), status.message)),
            ),
            Err(error) => Err(failed("publish")(error)),
        }
    }
}

fn to_secret_data(data: &SecretData) -> std::collections::BTreeMap<String, ByteString> {
    data.iter()
        .map(|(k, v)| (k.clone(), ByteString(v.clone())))
        .collect()
}

fn published_state(kind: Kind, name: &str, object: &DynamicObject) -> Published {
    let webhooks = object
        .data
        .get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let bundle = |webhook: &Value| {
        use base64::Engine as _;
        webhook
            .pointer("/clientConfig/caBundle")
            .and_then(Value::as_str)
            .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
            .map(|pem| certgen::bundle_cas(&pem))
            .unwrap_or_default()
    };
    Published {
        kind,
        name: name.to_string(),
        resource_version: object.metadata.resource_version.clone().unwrap_or_default(),
        webhook_names: webhooks
            .iter()
            .map(|w| {
                w.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect(),
        bundles: webhooks.iter().map(bundle).collect(),
    }
}

/// A JSON patch that sets every webhook's caBundle, refused as a whole if the
/// configuration changed since it was read (`test` of resourceVersion and of each
/// webhook's name, so an index never points at another webhook).
fn bundle_patch(config: &Published, pem: &str) -> Value {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(pem);
    let mut ops = vec![json!({
        "op": "test", "path": "/metadata/resourceVersion", "value": config.resource_version,
    })];
    for (i, name) in config.webhook_names.iter().enumerate() {
        ops.push(json!({"op": "test", "path": format!("/webhooks/{i}/name"), "value": name}));
        ops.push(json!({
            "op": "add", "path": format!("/webhooks/{i}/clientConfig/caBundle"), "value": encoded,
        }));
    }
    Value::Array(ops)
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod manager_tests;
