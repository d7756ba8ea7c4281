use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::wait::wait_for;

/// Written by `cluster/lifeguard-cluster up`.
pub const LOCAL_KUBECONFIG: &str = "/var/lib/lifeguard-cluster/kubeconfig";
/// Imported into the local node by `cluster/lifeguard-cluster up`; never pulled.
pub const BUSYBOX_IMAGE: &str = "lifeguard.local/busybox:latest";

/// A client for the cluster under test, checked to answer.
pub async fn client() -> anyhow::Result<Client> {
    let config = config().await?;
    let server = config.cluster_url.clone();
    let client = Client::try_from(config)?;
    client.apiserver_version().await.with_context(|| {
        format!("the API server at {server} does not answer; is the cluster up? (`cluster/lifeguard-cluster status`)")
    })?;
    Ok(client)
}

/// How to reach the cluster under test, as the test's own (admin) identity.
pub async fn config() -> anyhow::Result<Config> {
    Ok(match std::env::var_os("KUBECONFIG") {
        Some(_) => Config::infer()
            .await
            .context("KUBECONFIG is set but unusable")?,
        None if Path::new(LOCAL_KUBECONFIG).exists() => {
            let kubeconfig = Kubeconfig::read_from(LOCAL_KUBECONFIG)
                .with_context(|| format!("reading {LOCAL_KUBECONFIG}"))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => bail!(
            "no cluster: set KUBECONFIG, or start the local one with `cluster/lifeguard-cluster up`"
        ),
    })
}

/// The name of a Ready node to pin test pods to.
pub async fn node_name(client: &Client) -> anyhow::Result<String> {
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes.list(&ListParams::default()).await?;
    list.items
        .iter()
        .find(|node| {
            node.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .and_then(|node| node.metadata.name.clone())
        .context("the cluster has no Ready node")
}

/// Creates or replaces lifeguard's CRDs (generated from the types under test, not the
/// committed YAML) and waits until the API server serves them.
pub async fn apply_crds(client: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (_, mut crd) in lifeguard_api::crd::all() {
        let name = crd
            .metadata
            .name
            .clone()
            .context("generated CRD has no name")?;
        // Tests run in parallel and all install the CRDs: skip when already current, and
        // retry a replace that lost a race with another test.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let result = match crds.get_opt(&name).await? {
                None => crds.create(&PostParams::default(), &crd).await,
                Some(existing) if existing.spec == crd.spec => break,
                Some(existing) => {
                    crd.metadata.resource_version = existing.metadata.resource_version;
                    crds.replace(&name, &PostParams::default(), &crd).await
                }
            };
            match result {
                Ok(_) => break,
                Err(kube::Error::Api(s)) if (s.code == 409) && attempts < 5 => continue,
                Err(e) => return Err(e).with_context(|| format!("installing CRD {name}")),
            }
        }
        wait_for(
            &crds,
            &name,
            Duration::from_secs(30),
            "Established",
            |crd| {
                crd.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            },
        )
        .await?;
    }
    Ok(())
}

/// (reason, note) of the Events recorded about the `kind` object `name`, oldest first; in
/// namespace `ns`, or in any namespace (cluster-scoped objects) when it is `None`.
pub async fn events_about(
    client: &Client,
    ns: Option<&str>,
    kind: &str,
    name: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    let events: Api<k8s_openapi::api::events::v1::Event> = match ns {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut about: Vec<k8s_openapi::api::events::v1::Event> = events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name))
        })
        .collect();
    about.sort_by_key(|e| e.event_time.clone().map(|t| t.0));
    Ok(about
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect())
}

/// Reasons of the Events recorded about Workspace `name`, oldest first.
pub async fn workspace_event_reasons(
    client: &Client,
    ns: &str,
    name: &str,
) -> anyhow::Result<Vec<String>> {
    let events = events_about(client, Some(ns), "Workspace", name).await?;
    Ok(events.into_iter().map(|(reason, _)| reason).collect())
}

/// Waits until the Events about Workspace `name` include every one of `reasons`, and
/// returns all their reasons, oldest first. The controller records an Event after the
/// status write it reports, so a test that has just seen the status must wait for the
/// Event, not read once.
pub async fn wait_workspace_events(
    client: &Client,
    ns: &str,
    name: &str,
    reasons: &[&str],
) -> anyhow::Result<Vec<String>> {
    let what = format!("Events {reasons:?} about workspace {ns}/{name}");
    crate::wait::poll_until(&what, Duration::from_secs(60), || async {
        let seen = workspace_event_reasons(client, ns, name).await?;
        if reasons.iter().all(|r| seen.iter().any(|s| s == r)) {
            Ok(Some(seen))
        } else {
            bail!("reasons so far: {seen:?}")
        }
    })
    .await
}

/// One sample's labels in the API server's `/metrics` text.
pub struct MetricLabels<'a>(&'a str);

impl MetricLabels<'_> {
    /// The value of label `name`, empty when the sample has none.
    pub fn get(&self, name: &str) -> &str {
        self.0
            .split(',')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix("=\""))
            .map_or("", |v| v.trim_end_matches('"'))
    }
}

/// The samples of counter `series` in `text`, summed by the key `key` makes of each
/// sample's labels (`None` leaves the sample out).
pub fn counter_sums(
    text: &str,
    series: &str,
    key: impl Fn(&MetricLabels) -> Option<String>,
) -> BTreeMap<String, f64> {
    let prefix = format!("{series}{{");
    let mut sums = BTreeMap::new();
    for line in text.lines() {
        let Some((labels, value)) = line
            .strip_prefix(&prefix)
            .and_then(|rest| rest.rsplit_once("} "))
        else {
            continue;
        };
        if let (Some(k), Ok(value)) = (key(&MetricLabels(labels)), value.parse::<f64>()) {
            *sums.entry(k).or_insert(0.0) += value;
        }
    }
    sums
}

/// The API server's counter `series` so far, summed as `counter_sums` does.
pub async fn apiserver_counter_sums(
    client: &Client,
    series: &str,
    key: impl Fn(&MetricLabels) -> Option<String>,
) -> anyhow::Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    Ok(counter_sums(&text, series, key))
}

/// The API server's requests so far (`apiserver_request_total`), summed over codes and
/// callers, by `VERB resource` (`/subresource` where there is one): what a benchmark diffs
/// to show which calls a phase cost.
pub async fn apiserver_requests(client: &Client) -> anyhow::Result<BTreeMap<String, f64>> {
    apiserver_counter_sums(client, "apiserver_request_total", |l| {
        let (verb, resource, subresource) =
            (l.get("verb"), l.get("resource"), l.get("subresource"));
        Some(if subresource.is_empty() {
            format!("{verb} {resource}")
        } else {
            format!("{verb} {resource}/{subresource}")
        })
    })
    .await
}

/// When the Event `reason` about Workspace `name` was last recorded.
pub async fn workspace_event_time(
    client: &Client,
    ns: &str,
    name: &str,
    reason: &str,
) -> anyhow::Result<Option<jiff::Timestamp>> {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns);
    Ok(events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("Workspace") && r.name.as_deref() == Some(name)
                })
        })
        .filter_map(|e| e.event_time.map(|t| t.0))
        .max())
}

#[cfg(test)]
mod counter_tests {
    use super::*;

    #[test]
    fn samples_are_summed_by_the_key_of_their_labels() {
        let text = "# HELP x\n\
            apiserver_request_total{code=\"200\",resource=\"pods\",subresource=\"\",verb=\"GET\"} 3\n\
            apiserver_request_total{code=\"404\",resource=\"pods\",subresource=\"\",verb=\"GET\"} 2\n\
            apiserver_request_total{code=\"201\",resource=\"pods\",subresource=\"eviction\",verb=\"POST\"} 1\n\
            apiserver_request_total_other{verb=\"GET\"} 9\n";
        let sums = counter_sums(text, "apiserver_request_total", |l| {
            Some(format!(
                "{} {}{}",
                l.get("verb"),
                l.get("resource"),
                l.get("subresource")
            ))
        });
        assert_eq!(
            sums,
            BTreeMap::from([
                ("GET pods".to_string(), 5.0),
                ("POST podseviction".to_string(), 1.0)
            ])
        );
        let none = counter_sums(text, "apiserver_request_total", |l| {
            (l.get("code") == "500").then(|| "x".to_string())
        });
        assert!(none.is_empty());
    }
}
