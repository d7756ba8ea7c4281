//! Asks a draining window's gates (`spec.holdWhile`): the Prometheus query and the pods.
//! Thin I/O; whatever goes wrong becomes `Answer::Unknown`, which holds (`hold_decision.rs`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::core::{Selector, SelectorExt};
use lifeguard_api::hold::Gates;
use lifeguard_runtime::pages::Pages;

use super::hold_decision::{Answer, Gate};
use super::prometheus::Prometheus;

/// Pods per page while looking for a running blocker in a gate namespace.
const PAGE: u32 = 500;

/// Each configured gate's answer, Prometheus first. The pods gate looks only in the
/// namespaces `gate_namespaces` selects (`--pods-gate-namespaces`), labelled as
/// `namespace_labels` says.
pub async fn ask(
    client: &kube::Client,
    prometheus: Option<&Prometheus>,
    gates: &Gates,
    gate_namespaces: Option<&Selector>,
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<(Gate, Answer)> {
    let mut answers = Vec::new();
    if let Some(query) = &gates.query {
        let answer = match prometheus {
            None => Answer::Unknown("the controller has no --prometheus-url to ask".to_string()),
            Some(prometheus) => match prometheus.series(query).await {
                Ok(0) => Answer::Clear,
                Ok(n) => Answer::Holds(format!("the query {query:?} returns {n} series")),
                Err(why) => Answer::Unknown(why),
            },
        };
        answers.push((Gate::Prometheus, answer));
    }
    if let Some(selector) = &gates.pods {
        let answer = match gate_namespaces {
            None => Answer::Unknown(
                "the controller has no --pods-gate-namespaces to look in".to_string(),
            ),
            Some(namespaces) => {
                match running_blocker(client, selector, namespaces, namespace_labels).await {
                    Ok(None) => Answer::Clear,
                    Ok(Some(pod)) => Answer::Holds(format!("pod {pod} ({selector}) is Running")),
                    Err(e) => Answer::Unknown(format!("listing pods ({selector}): {e}")),
                }
            }
        };
        answers.push((Gate::Pods, answer));
    }
    answers
}

/// Whether the pods gate looks in a namespace labelled `labels`: only where the
/// administrator said (`--pods-gate-namespaces`), never in a namespace merely because a
/// window covers it: a tenant who may run a pod there could hold every drain.
pub fn gate_looks_in(gate_namespaces: &Selector, labels: &BTreeMap<String, String>) -> bool {
    gate_namespaces.matches(labels)
}

/// The first Running pod matching `selector` in a namespace `gate_namespaces` selects.
async fn running_blocker(
    client: &kube::Client,
    selector: &Selector,
    gate_namespaces: &Selector,
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<Option<String>, kube::Error> {
    let api: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default()
        .labels_from(selector)
        .fields("status.phase=Running")
        .limit(PAGE);
    let mut pages = Pages::new(params);
    let empty = BTreeMap::new();
    while let Some(page) = pages.next_metadata(&api).await? {
        let found = page.into_iter().find(|pod| {
            let namespace = pod.namespace().unwrap_or_default();
            gate_looks_in(
                gate_namespaces,
                namespace_labels.get(&namespace).unwrap_or(&empty),
            )
        });
        if let Some(pod) = found {
            return Ok(Some(format!(
                "{}/{}",
                pod.namespace().unwrap_or_default(),
                pod.name_any()
            )));
        }
    }
    Ok(None)
}

/// While an enforced window drains: asks its gates (none once nothing remains), decides the
/// hold, and when held leaves the drain no new stop. `None` when there is nothing to hold
/// (the status then drops `hold` and `DrainHeld`).
pub async fn hold_drain(
    ctx: &crate::Context,
    valid: &super::plan::ValidWindow,
    survey: &mut super::plan::Survey,
    kept: Option<&lifeguard_api::maintenance::HoldStatus>,
    now: jiff::Timestamp,
) -> Result<Option<super::hold_decision::Decision>, crate::Error> {
    let window = &valid.window;
    let (Some(gates), Some(drain), Some(occurrence)) = (
        window.gates.as_ref(),
        survey.drain.as_mut(),
        valid.status.current_occurrence.as_ref(),
    ) else {
        return Ok(None);
    };
    if !window.enforces() {
        return Ok(None);
    }
    // Nothing left to stop: no gate is asked, and an expiry of this occurrence stays shown.
    let answers = if drain.remaining == 0 {
        Vec::new()
    } else {
        let gate_namespaces = ctx.settings.pods_gate_namespaces.as_ref();
        let namespaces = if gates.pods.is_some() && gate_namespaces.is_some() {
            crate::namespaces::list_labels(&ctx.client).await?
        } else {
            BTreeMap::new()
        };
        ask(
            &ctx.client,
            ctx.prometheus.as_ref(),
            gates,
            gate_namespaces,
            &namespaces,
        )
        .await
    };
    let decision =
        super::hold_decision::decide(&answers, kept, occurrence.start.0, gates.max_hold, now);
    if decision.held {
        drain.to_stop.clear();
    }
    Ok(Some(decision))
}

/// The `drain_held` gauge follows the decision (a series per gate configured); an expiry
/// is counted and announced with a Warning Event.
pub async fn record(
    ctx: &crate::Context,
    mw: &lifeguard_api::MaintenanceWindow,
    decision: Option<&super::hold_decision::Decision>,
    max_hold: Option<jiff::SignedDuration>,
) {
    let name = mw.name_any();
    let held_by = decision
        .filter(|d| d.held)
        .and_then(|d| d.hold.as_ref())
        .map(|h| h.gate.as_str());
    for gate in [Gate::Prometheus, Gate::Pods] {
        let labels = [name.as_str(), gate.as_str()];
        if held_by == Some(gate.as_str()) {
            ctx.metrics.drain_held.with_label_values(&labels).set(1);
        } else if decision.is_some() {
            ctx.metrics.drain_held.with_label_values(&labels).set(0);
        } else {
            let _ = ctx.metrics.drain_held.remove_label_values(&labels);
        }
    }
    let Some((gate, hold)) = decision.and_then(|d| d.expired_now.zip(d.hold.as_ref())) else {
        return;
    };
    ctx.metrics
        .drain_hold_expiries
        .with_label_values(&[name.as_str(), gate.as_str()])
        .inc();
    tracing::warn!(window = %name, gate = gate.as_str(), "maxHold reached; the drain proceeds");
    ctx.event(
        mw,
        kube::runtime::events::EventType::Warning,
        "DrainHoldExpired",
        format!(
            "the {} gate held the drain since {} for maxHold ({}); the drain proceeds: {}",
            gate.as_str(),
            hold.since.0,
            max_hold.map_or_else(|| "-".to_string(), |d| format!("{d:#}")),
            hold.message
        ),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pods_gate_looks_only_where_the_administrator_said() {
        let backups = Selector::from_iter([("lifeguard.dev/backups", "true")]);
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        // (what, the namespace's labels, looked in)
        let cases = [
            (
                "the administrator's",
                labels(&[("lifeguard.dev/backups", "true")]),
                true,
            ),
            (
                "a tenant's, covered by the window",
                labels(&[("team", "a")]),
                false,
            ),
            ("no labels", labels(&[]), false),
        ];
        for (what, namespace, want) in cases {
            assert_eq!(gate_looks_in(&backups, &namespace), want, "{what}");
        }
    }
}
