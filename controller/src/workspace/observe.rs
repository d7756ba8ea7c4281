//! What `plan` needs to read besides the Workspace and its pod: a starting pod's latest
//! mount failure (`start_blocker`), a stopping pod's `DisposalReceipt` (the disposal
//! handshake) and, for an unscheduled pod, the node-scoped windows that cover it
//! (`steering`). Each is read only when the plan can use it, so a steady workspace costs no
//! extra call.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::events::EventType;
use lifeguard_api::Workspace;
use lifeguard_api::disposal::DisposalResult;
use lifeguard_api::receipt::{self, DisposalReceipt, ReceiptReading};
use lifeguard_api::window::CompiledWindow;

use crate::workspace::plan::Observed;
use crate::{Context, Error};

pub async fn observe(ctx: &Context, ws: &Workspace, pod: Option<&Pod>) -> Result<Observed, Error> {
    let Some(pod) = pod.filter(|p| crate::workspace::plan::controlled_by(p, ws)) else {
        return Ok(Observed::default());
    };
    Ok(Observed {
        mount_event: mount_event(ctx, ws, pod),
        receipt: receipt_answer(ctx, ws, pod).await?,
        steering: steering_windows(ctx, ws, pod),
    })
}

/// The enforcing node-scoped windows that cover `ws`, from the controller's caches of
/// windows and namespaces (no API call), while its pod is unscheduled. Covered as the
/// webhook decides it: by the Workspace's labels alone while its namespace's are unknown.
fn steering_windows(ctx: &Context, ws: &Workspace, pod: &Pod) -> Vec<CompiledWindow> {
    if !crate::workspace::steering::unscheduled(pod) {
        return Vec::new();
    }
    let namespace = ws.namespace().and_then(|ns| ctx.namespaces.labels(&ns));
    let labels = ws.labels();
    ctx.windows
        .store
        .state()
        .iter()
        .filter_map(|mw| CompiledWindow::compile(mw).ok())
        .filter(|w| w.enforces() && w.node_scoped())
        .filter(|w| match &namespace {
            Some(ns) => w.covers(ns, labels),
            None => w.covers_workspace(labels),
        })
        .collect()
}

/// The latest FailedMount or FailedAttachVolume Event of a pod still creating its
/// containers, from the controller's watch of those Events (`mount_events`): no API call.
fn mount_event(ctx: &Context, ws: &Workspace, pod: &Pod) -> Option<(String, String)> {
    // No status yet: not started (`started` needs a podReadyTime).
    if pod.metadata.deletion_timestamp.is_some()
        || ws
            .status
            .as_ref()
            .is_some_and(|status| crate::workspace::start::started(status, pod))
        || !lifeguard_api::start_blocker::creating_containers(pod)
    {
        return None;
    }
    ctx.mount_events.latest(pod.metadata.uid.as_deref()?)
}

/// The agent's answer by receipt for a pod whose disposal waits for one. A receipt that
/// is not this pod's is ignored: a Warning Event on the Workspace and a counter say so, and
/// the pod goes on waiting (for a real answer or the timeout).
async fn receipt_answer(
    ctx: &Context,
    ws: &Workspace,
    pod: &Pod,
) -> Result<Option<DisposalResult>, Error> {
    if !crate::disposal::awaiting_answer(ws, pod) {
        return Ok(None);
    }
    let (Some(uid), Some(namespace)) = (pod.metadata.uid.as_deref(), pod.namespace()) else {
        return Ok(None);
    };
    let receipts: Api<DisposalReceipt> = Api::namespaced(ctx.client.clone(), &namespace);
    // Not found is the usual answer until the agent is done; a cluster without the CRD
    // answers the same, and the annotation still works there.
    let Some(found) = receipts.get_opt(uid).await? else {
        return Ok(None);
    };
    match receipt::read(&found, pod) {
        ReceiptReading::Answer(answer) => Ok(Some(answer)),
        ReceiptReading::Ignored(why) => {
            ctx.metrics.disposal_receipts_ignored.inc();
            ctx.event(
                ws,
                EventType::Warning,
                "DisposalReceiptIgnored",
                format!("{why}; the pod waits for its own answer or the confirmation timeout"),
            )
            .await;
            Ok(None)
        }
    }
}
