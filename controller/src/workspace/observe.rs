//! What `plan` needs to read besides the Workspace and its pod: a starting pod's latest
//! mount failure (`start_blocker`) and a stopping pod's `DisposalReceipt` (the disposal
//! handshake). Each is read only when the plan can use it, so a steady workspace costs no
//! extra call.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::runtime::events::EventType;
use lifeguard_api::Workspace;
use lifeguard_api::disposal::DisposalResult;
use lifeguard_api::receipt::{self, DisposalReceipt, ReceiptReading};

use crate::workspace::plan::Observed;
use crate::{Context, Error};

/// How long a pod may be creating its containers before its mount Events are read: a
/// volume usually mounts within a few seconds, and the read is one LIST per look.
const MOUNT_EVENTS_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_secs(10);

pub async fn observe(
    ctx: &Context,
    ws: &Workspace,
    pod: Option<&Pod>,
    now: Timestamp,
) -> Result<Observed, Error> {
    let Some(pod) = pod.filter(|p| crate::workspace::plan::controlled_by(p, ws)) else {
        return Ok(Observed::default());
    };
    Ok(Observed {
        mount_event: mount_event(ctx, ws, pod, now).await?,
        receipt: receipt_answer(ctx, ws, pod).await?,
    })
}

/// The latest FailedMount or FailedAttachVolume Event of a pod still creating its
/// containers after [`MOUNT_EVENTS_AFTER`].
async fn mount_event(
    ctx: &Context,
    ws: &Workspace,
    pod: &Pod,
    now: Timestamp,
) -> Result<Option<(String, String)>, Error> {
    let status = ws.status.clone().unwrap_or_default();
    let old_enough = pod
        .metadata
        .creation_timestamp
        .as_ref()
        .is_some_and(|c| now.duration_since(c.0) >= MOUNT_EVENTS_AFTER);
    if pod.metadata.deletion_timestamp.is_some()
        || !old_enough
        || crate::workspace::start::started(&status, pod)
        || !lifeguard_api::start_blocker::creating_containers(pod)
    {
        return Ok(None);
    }
    let (Some(uid), Some(namespace)) = (pod.metadata.uid.as_deref(), pod.namespace()) else {
        return Ok(None);
    };
    let events: Api<Event> = Api::namespaced(ctx.client.clone(), &namespace);
    // A pod's Events are few; the limit bounds a pathological one.
    let params = ListParams::default()
        .fields(&format!("involvedObject.uid={uid}"))
        .limit(100);
    let list = events.list(&params).await?;
    let latest = list
        .items
        .into_iter()
        .filter(|e| {
            e.reason
                .as_deref()
                .is_some_and(|r| lifeguard_api::start_blocker::MOUNT_EVENT_REASONS.contains(&r))
        })
        .max_by_key(|e| {
            e.last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or(e.event_time.as_ref().map(|t| t.0))
        });
    Ok(latest.map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default())))
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
