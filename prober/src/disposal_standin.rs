//! A stand-in for the node's workspace daemon in the disposal handshake
//! (docs/controller.md, "Keeping a pod until its work is saved"), showing how a node agent
//! takes part: it looks at the stopping workspace pods on its node that wait for a
//! confirmation, "saves" each one's work (it waits `--disposal-standin-save-time`, where a
//! real daemon would copy the files), and answers on the pod. The node's verdict decides
//! the answer: on an unhealthy node the workspace disk cannot be trusted, so it answers
//! `failed`; while the verdict is unknown it waits, and the controller's timeout is the
//! backstop.
//!
//! Off unless the flag is given, and it only answers for pods labelled
//! `disposal-standin: "true"`, so a real agent on the same node is never
//! second-guessed. Its rights come from binding the `lifeguard-disposal-agent` ClusterRole
//! to the prober's ServiceAccount; without that binding it logs the refusal and keeps
//! trying.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use lifeguard_api::disposal;
use lifeguard_api::names::DISPOSAL_RESULT_ANNOTATION;
use serde_json::json;

use crate::state::Shared;
use crate::verdict::Verdict;

/// The label a workspace pod carries to have this stand-in answer for it.
/// Not under `lifeguard.dev/`: keys there are controller state a pod template may not set.
pub const STANDIN_LABEL: &str = "disposal-standin";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Not a pod this stand-in answers for, or already answered.
    NotMine,
    /// Its containers still run, the "backup" is not done, or the verdict is unknown.
    Wait,
    /// Set this as the pod's `lifeguard.dev/disposal-result`.
    Give(String),
}

/// What the stand-in does about `pod` at `now`, with the node's `verdict`.
pub fn answer(pod: &Pod, verdict: Verdict, now: Timestamp, save_time: SignedDuration) -> Answer {
    let annotations = pod.metadata.annotations.as_ref();
    let labelled = pod.labels().get(STANDIN_LABEL).is_some_and(|v| v == "true");
    if !labelled
        || !disposal::confirmation_required(annotations)
        || disposal::result(annotations).is_some()
    {
        return Answer::NotMine;
    }
    let Some(asked) = pod.metadata.deletion_timestamp.as_ref().map(|t| t.0) else {
        return Answer::NotMine;
    };
    if disposal::any_container_running(pod) {
        return Answer::Wait;
    }
    match verdict {
        Verdict::Unhealthy => Answer::Give(
            "failed: the node's prober finds it unhealthy; its workspace disk cannot be trusted"
                .into(),
        ),
        Verdict::Unknown => Answer::Wait,
        Verdict::Healthy if now >= asked.checked_add(save_time).unwrap_or(asked) => {
            Answer::Give("saved".into())
        }
        Verdict::Healthy => Answer::Wait,
    }
}

/// Looks at this node's opted-in workspace pods every second and answers those that are due.
pub async fn run(
    client: Client,
    node: String,
    shared: std::sync::Arc<Shared>,
    save_time: Duration,
) {
    let save_time = SignedDuration::try_from(save_time).unwrap_or(SignedDuration::ZERO);
    let pods: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default()
        .labels(&format!("{STANDIN_LABEL}=true"))
        .fields(&format!("spec.nodeName={node}"));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let listed = match pods.list(&params).await {
            Ok(list) => list.items,
            Err(error) => {
                tracing::debug!(%error, "disposal stand-in: cannot list this node's workspace pods");
                continue;
            }
        };
        let verdict = shared.verdict();
        for pod in listed {
            let Answer::Give(result) = answer(&pod, verdict, Timestamp::now(), save_time) else {
                continue;
            };
            let namespace = pod.namespace().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
            let patch = json!({"metadata": {"annotations": {DISPOSAL_RESULT_ANNOTATION: result}}});
            match api
                .patch(
                    &pod.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(pod = %pod.name_any(), %namespace, %result, "disposal stand-in answered")
                }
                Err(error) => {
                    tracing::warn!(%error, pod = %pod.name_any(), "disposal stand-in cannot answer")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn pod(
        labelled: bool,
        required: bool,
        result: Option<&str>,
        deleting: bool,
        running: bool,
    ) -> Pod {
        let mut annotations = serde_json::Map::new();
        if required {
            annotations.insert(
                "lifeguard.dev/disposal-confirmation".into(),
                json!("required"),
            );
        }
        if let Some(r) = result {
            annotations.insert(DISPOSAL_RESULT_ANNOTATION.into(), json!(r));
        }
        let labels = if labelled {
            json!({STANDIN_LABEL: "true"})
        } else {
            json!({})
        };
        let state = if running {
            json!({"running": {}})
        } else {
            json!({"terminated": {"exitCode": 0}})
        };
        serde_json::from_value(json!({
            "metadata": {"name": "ws-a", "namespace": "dev", "labels": labels, "annotations": annotations,
                         "deletionTimestamp": if deleting { json!("2026-12-01T22:00:00Z") } else { Value::Null }},
            "status": {"containerStatuses": [{"name": "ide", "image": "x", "imageID": "", "ready": false,
                                              "restartCount": 0, "state": state}]}
        }))
        .expect("pod literal")
    }

    #[test]
    fn what_the_stand_in_answers() {
        let save = SignedDuration::from_secs(3);
        let during = "2026-12-01T22:00:02Z".parse().expect("time");
        let after = "2026-12-01T22:00:03Z".parse().expect("time");
        let saved = Answer::Give("saved".into());
        let cases = [
            (
                "not opted in",
                pod(false, true, None, true, false),
                Verdict::Healthy,
                after,
                Answer::NotMine,
            ),
            (
                "no handshake",
                pod(true, false, None, true, false),
                Verdict::Healthy,
                after,
                Answer::NotMine,
            ),
            (
                "already answered",
                pod(true, true, Some("saved"), true, false),
                Verdict::Healthy,
                after,
                Answer::NotMine,
            ),
            (
                "still running",
                pod(true, true, None, false, true),
                Verdict::Healthy,
                after,
                Answer::NotMine,
            ),
            (
                "stopping",
                pod(true, true, None, true, true),
                Verdict::Healthy,
                after,
                Answer::Wait,
            ),
            (
                "saving",
                pod(true, true, None, true, false),
                Verdict::Healthy,
                during,
                Answer::Wait,
            ),
            (
                "saved",
                pod(true, true, None, true, false),
                Verdict::Healthy,
                after,
                saved,
            ),
            (
                "verdict unknown",
                pod(true, true, None, true, false),
                Verdict::Unknown,
                after,
                Answer::Wait,
            ),
        ];
        for (what, p, verdict, now, want) in cases {
            assert_eq!(answer(&p, verdict, now, save), want, "{what}");
        }
        let broken = answer(
            &pod(true, true, None, true, false),
            Verdict::Unhealthy,
            during,
            save,
        );
        assert!(
            matches!(&broken, Answer::Give(r) if r.starts_with("failed: ") && r.contains("unhealthy")),
            "an unhealthy node's work is not called saved: {broken:?}"
        );
    }
}
