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
//! second-guessed. It answers as `--disposal-standin-answer` says: by `DisposalReceipt`
//! (the default; rights from binding the `lifeguard-disposal-agent-receipts` ClusterRole,
//! which cannot write any pod) or on the pod (`lifeguard-disposal-agent`, which can).
//! Without the binding it logs the refusal and keeps trying.

use std::collections::HashSet;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use lifeguard_api::disposal::{self, DisposalResult};
use lifeguard_api::names::DISPOSAL_RESULT_ANNOTATION;
use lifeguard_api::receipt::{self, DisposalReceipt, ReceiptResult};
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
    /// Answer this.
    Give(DisposalResult),
}

/// How the stand-in answers (`--disposal-standin-answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswerBy {
    /// Create a `DisposalReceipt`: needs no right to write pods.
    Receipt,
    /// Set `lifeguard.dev/disposal-result` on the pod: needs `patch pods`.
    Annotation,
}

/// What the stand-in does about `pod` at `now`, with the node's `verdict`; `answered`:
/// whether it already answered by receipt (a receipt is not on the pod).
pub fn answer(
    pod: &Pod,
    answered: bool,
    verdict: Verdict,
    now: Timestamp,
    save_time: SignedDuration,
) -> Answer {
    let annotations = pod.metadata.annotations.as_ref();
    let labelled = pod.labels().get(STANDIN_LABEL).is_some_and(|v| v == "true");
    if !labelled
        || answered
        || !disposal::confirmation_required(annotations)
        || disposal::result(annotations).is_some()
    {
        return Answer::NotMine;
    }
    if pod.metadata.deletion_timestamp.is_none() {
        return Answer::NotMine;
    }
    if disposal::any_container_running(pod) {
        return Answer::Wait;
    }
    let Some(due) = due_at(pod, save_time) else {
        return Answer::Wait;
    };
    match verdict {
        Verdict::Unhealthy => Answer::Give(DisposalResult::Failed(
            "the node's prober finds it unhealthy; its workspace disk cannot be trusted".into(),
        )),
        Verdict::Unknown => Answer::Wait,
        // Cordoned is not unhealthy (the volume check still runs and would say so): a
        // drain is exactly when the node's workspaces are saved.
        Verdict::Healthy | Verdict::Cordoned if now >= due => Answer::Give(DisposalResult::Saved),
        Verdict::Healthy | Verdict::Cordoned => Answer::Wait,
    }
}

/// When the "backup" of a stopping pod is done: `save_time` after its containers stopped
/// (the latest `finishedAt`), since a real daemon starts copying once the workspace no
/// longer writes, not when the delete was asked (the deletion timestamp lies a grace
/// period ahead). Falls back to the deletion timestamp for containers that never ran.
pub fn due_at(pod: &Pod, save_time: SignedDuration) -> Option<Timestamp> {
    let finished = lifeguard_api::disposal::containers_finished_at(pod);
    let since = finished.or(pod.metadata.deletion_timestamp.as_ref().map(|t| t.0))?;
    Some(since.checked_add(save_time).unwrap_or(since))
}

/// Looks at this node's opted-in workspace pods every second, and sooner when a "backup"
/// falls due, so an answer comes when the save is done rather than up to a second later.
pub async fn run(
    client: Client,
    node: String,
    shared: std::sync::Arc<Shared>,
    save_time: Duration,
    by: AnswerBy,
) {
    let save_time = SignedDuration::try_from(save_time).unwrap_or(SignedDuration::ZERO);
    let pods: Api<Pod> = Api::all(client.clone());
    // Served from the API server's watch cache (resourceVersion 0, "any"): a list without
    // it is read from etcd, every pod of the cluster, each second, on every node. A second's
    // staleness costs nothing here; the next poll sees what this one missed.
    let params = ListParams::default()
        .labels(&format!("{STANDIN_LABEL}=true"))
        .fields(&format!("spec.nodeName={node}"))
        .match_any();
    // Pods answered by receipt, by UID; kept only while they are still listed, so it is
    // bounded by the pods on this node.
    let mut answered: HashSet<String> = HashSet::new();
    let mut wake = tokio::time::Instant::now();
    loop {
        tokio::time::sleep_until(wake).await;
        wake = tokio::time::Instant::now() + Duration::from_secs(1);
        let listed = match pods.list(&params).await {
            Ok(list) => list.items,
            Err(error) => {
                tracing::debug!(%error, "disposal stand-in: cannot list this node's workspace pods");
                continue;
            }
        };
        answered.retain(|uid| listed.iter().any(|p| p.metadata.uid.as_ref() == Some(uid)));
        let verdict = shared.verdict();
        let now = Timestamp::now();
        for pod in listed {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let Answer::Give(result) =
                answer(&pod, answered.contains(&uid), verdict, now, save_time)
            else {
                if let Some(due) = due_at(&pod, save_time).filter(|due| *due > now) {
                    let until = Duration::try_from(due.duration_since(now)).unwrap_or_default();
                    // A little after the due time, so the next look finds it due.
                    let at = tokio::time::Instant::now() + until + Duration::from_millis(20);
                    wake = wake.min(at);
                }
                continue;
            };
            let sent = match by {
                AnswerBy::Receipt => give_receipt(&client, &pod, &result).await,
                AnswerBy::Annotation => give_annotation(&client, &pod, &result).await,
            };
            match sent {
                Ok(()) => {
                    answered.insert(uid);
                    tracing::info!(pod = %pod.name_any(), namespace = %pod.namespace().unwrap_or_default(), ?result, ?by, "disposal stand-in answered")
                }
                Err(error) => {
                    tracing::warn!(%error, pod = %pod.name_any(), ?by, "disposal stand-in cannot answer")
                }
            }
        }
    }
}

/// The annotation's text for `result`.
fn annotation_value(result: &DisposalResult) -> String {
    match result {
        DisposalResult::Saved => "saved".into(),
        DisposalResult::Failed(why) => format!("failed: {why}"),
    }
}

async fn give_annotation(client: &Client, pod: &Pod, result: &DisposalResult) -> kube::Result<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    let patch = json!({"metadata": {"annotations": {DISPOSAL_RESULT_ANNOTATION: annotation_value(result)}}});
    api.patch(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
}

async fn give_receipt(client: &Client, pod: &Pod, result: &DisposalResult) -> kube::Result<()> {
    let (verdict, reason) = match result {
        DisposalResult::Saved => (ReceiptResult::Saved, None),
        DisposalResult::Failed(why) => (ReceiptResult::Failed, Some(why.clone())),
    };
    let Some(made) = receipt::for_pod(pod, verdict, reason) else {
        return Ok(()); // a listed pod always has a name and UID
    };
    let api: Api<DisposalReceipt> =
        Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    match api.create(&PostParams::default(), &made).await {
        // Already answered (by an earlier look whose reply was lost): the first stands.
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error),
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
            json!({"terminated": {"exitCode": 0, "finishedAt": "2026-12-01T21:59:59Z"}})
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
        // The containers stopped at 21:59:59, the deletion timestamp (a grace period
        // ahead) is 22:00:00: the save is done at 22:00:02, counted from the stop.
        let during = "2026-12-01T22:00:01Z".parse().expect("time");
        let after = "2026-12-01T22:00:02Z".parse().expect("time");
        let saved = Answer::Give(DisposalResult::Saved);
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
            (
                "saved on a node being drained",
                pod(true, true, None, true, false),
                Verdict::Cordoned,
                after,
                Answer::Give(DisposalResult::Saved),
            ),
        ];
        for (what, p, verdict, now, want) in cases {
            assert_eq!(answer(&p, false, verdict, now, save), want, "{what}");
        }
        assert_eq!(
            answer(
                &pod(true, true, None, true, false),
                true,
                Verdict::Healthy,
                after,
                save
            ),
            Answer::NotMine,
            "already answered by receipt"
        );
        let mut never_ran = pod(true, true, None, true, false);
        if let Some(status) = never_ran.status.as_mut() {
            status.container_statuses = None;
        }
        assert_eq!(
            due_at(&never_ran, save),
            Some("2026-12-01T22:00:03Z".parse().expect("time")),
            "without a stopped container the save counts from the deletion timestamp"
        );
        let broken = answer(
            &pod(true, true, None, true, false),
            false,
            Verdict::Unhealthy,
            during,
            save,
        );
        assert!(
            matches!(&broken, Answer::Give(DisposalResult::Failed(r)) if r.contains("unhealthy")),
            "an unhealthy node's work is not called saved: {broken:?}"
        );
        assert_eq!(
            annotation_value(&DisposalResult::Failed("disk".into())),
            "failed: disk"
        );
        assert_eq!(
            disposal::result(Some(
                &[(
                    DISPOSAL_RESULT_ANNOTATION.to_string(),
                    annotation_value(&DisposalResult::Saved)
                )]
                .into_iter()
                .collect()
            )),
            Some(DisposalResult::Saved),
            "the controller reads what the stand-in writes"
        );
    }
}
