//! The disposal handshake between the controller and a node's backup agent: what the
//! agent's answer on the pod means. Pure.

use crate::names::{DISPOSAL_CONFIRMATION_ANNOTATION, DISPOSAL_RESULT_ANNOTATION};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use std::collections::BTreeMap;

/// The value of [`DISPOSAL_CONFIRMATION_ANNOTATION`] on a pod whose disposal waits for it.
pub const CONFIRMATION_REQUIRED: &str = "required";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisposalResult {
    /// The agent saved the workspace's work: nothing is lost.
    Saved,
    /// The agent could not save it (its words, or why its answer was not understood).
    Failed(String),
}

/// Every container status of `pod` that can hold the workspace's work while it stops: its
/// containers and its native sidecars (init containers with `restartPolicy: Always`, which
/// the kubelet stops after the containers). A plain init container has finished before any
/// container starts, so its status never runs and never ends later than theirs.
fn stopping_statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    let status = pod.status.as_ref();
    let containers = status.and_then(|s| s.container_statuses.as_ref());
    let init = status.and_then(|s| s.init_container_statuses.as_ref());
    containers.into_iter().chain(init).flatten()
}

/// Whether any container of `pod` (a native sidecar included) still runs: its work is not
/// done being written while one does, so neither the controller's release nor an agent's
/// answer may come before.
pub fn any_container_running(pod: &Pod) -> bool {
    stopping_statuses(pod).any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

/// When the kubelet reported the last of `pod`'s containers (native sidecars included)
/// stopped (the latest `finishedAt` among those terminated), if it reported any: when its
/// work is all on disk, which is when a backup agent can start to save it.
pub fn containers_finished_at(pod: &Pod) -> Option<jiff::Timestamp> {
    stopping_statuses(pod)
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max()
}

/// Whether a pod with these annotations waits for its agent's confirmation.
pub fn confirmation_required(annotations: Option<&BTreeMap<String, String>>) -> bool {
    annotations
        .and_then(|a| a.get(DISPOSAL_CONFIRMATION_ANNOTATION))
        .is_some_and(|v| v == CONFIRMATION_REQUIRED)
}

/// The agent's answer on a pod with these annotations, if it gave one. Anything but `saved`
/// counts as a failure: an answer the controller cannot read must not pass for saved work.
pub fn result(annotations: Option<&BTreeMap<String, String>>) -> Option<DisposalResult> {
    let value = annotations?.get(DISPOSAL_RESULT_ANNOTATION)?.trim();
    if value == "saved" {
        return Some(DisposalResult::Saved);
    }
    let why = match value.split_once(':') {
        Some(("failed", why)) if !why.trim().is_empty() => why.trim().to_string(),
        _ if value == "failed" => "no reason given".to_string(),
        _ => format!("unrecognised result {value:?} (expected \"saved\" or \"failed: <why>\")"),
    };
    Some(DisposalResult::Failed(why))
}

/// What the agent said, from its answer on the pod and its receipt (`crate::receipt`),
/// either of which may be missing. A failure from either stands, so that one "saved" cannot
/// hide the other's report that the work is lost; the pod's own answer speaks first.
pub fn heard(
    on_pod: Option<DisposalResult>,
    receipt: Option<DisposalResult>,
) -> Option<DisposalResult> {
    match (on_pod, receipt) {
        (Some(DisposalResult::Failed(why)), _) | (_, Some(DisposalResult::Failed(why))) => {
            Some(DisposalResult::Failed(why))
        }
        (Some(DisposalResult::Saved), _) | (_, Some(DisposalResult::Saved)) => {
            Some(DisposalResult::Saved)
        }
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_native_sidecar_still_running_holds_the_stop() {
        let running = serde_json::json!({"running": {"startedAt": "2026-12-01T10:00:00Z"}});
        let ended = |at: &str| serde_json::json!({"terminated": {"exitCode": 0, "finishedAt": at}});
        let status = |name: &str, state: &serde_json::Value| {
            serde_json::json!({"name": name, "image": "i", "imageID": "", "ready": false,
                               "restartCount": 0, "state": state})
        };
        // (what, containers, init containers, running?, last stop)
        let cases = [
            (
                "ide running",
                vec![status("ide", &running)],
                vec![],
                true,
                None,
            ),
            (
                "ide stopped, its sync sidecar still running",
                vec![status("ide", &ended("2026-12-01T11:00:05Z"))],
                vec![status("sync", &running)],
                true,
                Some("2026-12-01T11:00:05Z"),
            ),
            (
                "ide and sidecar stopped: the sidecar's stop is the last",
                vec![status("ide", &ended("2026-12-01T11:00:05Z"))],
                vec![status("sync", &ended("2026-12-01T11:00:09Z"))],
                false,
                Some("2026-12-01T11:00:09Z"),
            ),
            (
                "a plain init container ended before the ide started",
                vec![status("ide", &ended("2026-12-01T11:00:05Z"))],
                vec![status("setup", &ended("2026-12-01T10:00:00Z"))],
                false,
                Some("2026-12-01T11:00:05Z"),
            ),
        ];
        for (what, containers, init, want_running, want_last) in cases {
            let pod: Pod = serde_json::from_value(serde_json::json!({"status": {
                "containerStatuses": containers, "initContainerStatuses": init}}))
            .expect("pod literal");
            assert_eq!(any_container_running(&pod), want_running, "{what}");
            let last = want_last.map(|t| t.parse::<jiff::Timestamp>().expect("time"));
            assert_eq!(containers_finished_at(&pod), last, "{what}");
        }
    }

    #[test]
    fn what_the_agent_said() {
        let cases = [
            (vec![], None),
            (
                vec![(DISPOSAL_RESULT_ANNOTATION, "saved")],
                Some(DisposalResult::Saved),
            ),
            (
                vec![(DISPOSAL_RESULT_ANNOTATION, " saved ")],
                Some(DisposalResult::Saved),
            ),
            (
                vec![(DISPOSAL_RESULT_ANNOTATION, "failed: disk full")],
                Some(DisposalResult::Failed("disk full".into())),
            ),
            (
                vec![(DISPOSAL_RESULT_ANNOTATION, "failed")],
                Some(DisposalResult::Failed("no reason given".into())),
            ),
            (
                vec![(DISPOSAL_RESULT_ANNOTATION, "Saved!")],
                Some(DisposalResult::Failed(
                    "unrecognised result \"Saved!\" (expected \"saved\" or \"failed: <why>\")"
                        .into(),
                )),
            ),
        ];
        for (pairs, want) in cases {
            assert_eq!(result(Some(&annotations(&pairs))), want, "{pairs:?}");
        }
        assert_eq!(result(None), None);
    }

    #[test]
    fn a_failure_from_either_answer_stands() {
        let saved = || Some(DisposalResult::Saved);
        let failed = |w: &str| Some(DisposalResult::Failed(w.into()));
        let cases = [
            (None, None, None),
            (saved(), None, saved()),
            (None, saved(), saved()),
            (saved(), saved(), saved()),
            (failed("disk"), saved(), failed("disk")),
            (saved(), failed("quota"), failed("quota")),
            (failed("disk"), failed("quota"), failed("disk")),
            (None, failed("quota"), failed("quota")),
        ];
        for (on_pod, receipt, want) in cases {
            let what = format!("{on_pod:?} + {receipt:?}");
            assert_eq!(heard(on_pod, receipt), want, "{what}");
        }
    }

    #[test]
    fn which_pods_wait_for_confirmation() {
        let cases = [
            (vec![], false),
            (vec![(DISPOSAL_CONFIRMATION_ANNOTATION, "required")], true),
            (vec![(DISPOSAL_CONFIRMATION_ANNOTATION, "no")], false),
        ];
        for (pairs, want) in cases {
            assert_eq!(
                confirmation_required(Some(&annotations(&pairs))),
                want,
                "{pairs:?}"
            );
        }
    }
}
