//! MaintenanceWindow status (active, current and next occurrence) and draining: while a
//! `drain: true` window is active, covered workspaces are asked to stop and the window's
//! status counts what remains, until `Drained`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::controller::Error as ControllerError;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use lifeguard_api::maintenance::OccurrenceStatus;
use lifeguard_api::names::DRAINED_BY_ANNOTATION;
use lifeguard_api::schedule::Occurrence;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, Workspace};
use serde_json::json;

use crate::drain;
use crate::metrics::Metrics;
use crate::reconcile::{Context, Error};
use crate::status::set_condition;

const DRAINING_POLL: Duration = Duration::from_secs(2);
const IDLE_POLL: Duration = Duration::from_secs(300);
/// While a window gives notice, how often the count of notified workspaces is refreshed.
const NOTICE_POLL: Duration = Duration::from_secs(5);
const DRAIN_PAGE: u32 = 200;

fn occurrence(o: Occurrence) -> OccurrenceStatus {
    OccurrenceStatus {
        start: Time(o.start),
        end: Time(o.end),
    }
}

async fn namespace_labels(
    ctx: &Context,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, Error> {
    let api: Api<PartialObjectMeta<Namespace>> = Api::all(ctx.client.clone());
    Ok(api
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|ns| (ns.name_any(), ns.metadata.labels.unwrap_or_default()))
        .collect())
}

/// What one pass over the Workspaces found for a window.
#[derive(Default)]
struct Survey {
    /// While draining.
    drain: Option<drain::DrainPlan>,
    /// While the window gives notice: workspaces that carry it.
    notified: Option<u32>,
}

/// Reads Workspaces a page at a time: a drain re-plans every two seconds, and a full list
/// of 10,000 workspaces each time would cost tens of megabytes per pass. One pass serves
/// both the drain and the count of notified workspaces.
async fn survey(
    ctx: &Context,
    window: &CompiledWindow,
    draining: bool,
    noticing: bool,
) -> Result<Survey, Error> {
    let mut survey = Survey::default();
    if !draining && !noticing {
        return Ok(survey);
    }
    let namespaces = if draining {
        survey.drain = Some(drain::DrainPlan::default());
        namespace_labels(ctx).await?
    } else {
        BTreeMap::new()
    };
    if noticing {
        survey.notified = Some(0);
    }
    let api = Api::<Workspace>::all(ctx.client.clone());
    let mut params = ListParams::default().limit(DRAIN_PAGE);
    loop {
        let page = api.list(&params).await?;
        if let Some(plan) = survey.drain.as_mut() {
            plan.add(window, &page.items, &namespaces);
        }
        if let Some(count) = survey.notified.as_mut() {
            *count += page
                .items
                .iter()
                .filter(|ws| carries_notice_of(ws, &window.name))
                .count() as u32;
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(survey),
        }
    }
}

fn carries_notice_of(ws: &Workspace, window: &str) -> bool {
    ws.status
        .as_ref()
        .and_then(|s| s.maintenance_notice.as_ref())
        .is_some_and(|n| n.window == window)
}

pub async fn reconcile_window(
    mw: Arc<MaintenanceWindow>,
    ctx: Arc<Context>,
) -> Result<Requeue, Error> {
    let windows: Api<MaintenanceWindow> = Api::all(ctx.client.clone());
    let name = mw.name_any();
    let now = Timestamp::now();
    let generation = mw.metadata.generation;
    let mut status = mw.status.clone().unwrap_or_default();
    let window = match CompiledWindow::compile(&mw) {
        Ok(window) => window,
        Err(errors) => {
            // Stored before the webhook could refuse it: say so where the operator looks.
            set_condition(
                &mut status.conditions,
                "Valid",
                false,
                "InvalidSpec",
                &errors.to_string(),
                generation,
                now,
            );
            status.active = false;
            write_status(&windows, &name, &status).await?;
            return Ok(Requeue::requeue(IDLE_POLL));
        }
    };
    set_condition(
        &mut status.conditions,
        "Valid",
        true,
        "Valid",
        "the spec is valid",
        generation,
        now,
    );
    let active = window.active_at(now);
    status.active = active.is_some();
    status.current_occurrence = active.map(occurrence);
    status.next_occurrence = window
        .schedule()
        .next_after(now, 1)
        .first()
        .copied()
        .map(occurrence);
    status.observed_generation = generation;
    let until_change = [
        window.schedule().next_change(now),
        window.next_notice_change(now),
    ]
    .into_iter()
    .flatten()
    .min()
    .map(|t| t.duration_since(now).unsigned_abs())
    .unwrap_or(IDLE_POLL);
    let mut requeue = until_change.clamp(Duration::from_secs(1), IDLE_POLL);

    let was_drained = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Drained" && c.status == "True");
    let noticing = window.noticed_occurrence(now).is_some();
    let survey = survey(&ctx, &window, drain::draining(&window, now), noticing).await?;
    status.workspaces_notified = survey.notified;
    match survey.notified {
        Some(count) => {
            ctx.metrics
                .workspaces_notified
                .with_label_values(&[name.as_str()])
                .set(i64::from(count));
            requeue = requeue.min(NOTICE_POLL);
        }
        None => {
            let _ = ctx
                .metrics
                .workspaces_notified
                .remove_label_values(&[name.as_str()]);
        }
    }
    match survey.drain {
        Some(plan) => {
            for (namespace, ws) in &plan.to_stop {
                let api: Api<Workspace> = Api::namespaced(ctx.client.clone(), namespace);
                let patch = json!({"metadata": {"annotations": {DRAINED_BY_ANNOTATION: name}}});
                api.patch(ws, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                tracing::info!(window = %name, workspace = %ws, %namespace, "draining workspace");
            }
            status.workspaces_remaining = Some(plan.remaining);
            ctx.metrics
                .drain_remaining
                .with_label_values(&[name.as_str()])
                .set(i64::from(plan.remaining));
            let drained = plan.remaining == 0;
            let message = if drained {
                "every covered workspace has stopped".to_string()
            } else {
                format!("{} covered workspaces still running", plan.remaining)
            };
            set_condition(
                &mut status.conditions,
                "Drained",
                drained,
                if drained { "Drained" } else { "Draining" },
                &message,
                generation,
                now,
            );
            if drained && !was_drained {
                publish(&ctx, &mw, "Drained", message).await;
            }
            requeue = requeue.min(DRAINING_POLL);
        }
        None => {
            status.workspaces_remaining = None;
            status.conditions.retain(|c| c.type_ != "Drained");
            let _ = ctx
                .metrics
                .drain_remaining
                .remove_label_values(&[name.as_str()]);
        }
    }
    if Some(&status) != mw.status.as_ref() {
        write_status(&windows, &name, &status).await?;
    }
    Ok(Requeue::requeue(requeue))
}

async fn publish(ctx: &Context, mw: &MaintenanceWindow, reason: &str, note: String) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    let published =
        lifeguard_api::events::publish(&ctx.client, &ctx.reporter, &mw.object_ref(&()), &event)
            .await;
    if let Err(error) = published {
        tracing::warn!(%error, window = %mw.name_any(), "cannot publish event");
    }
}

async fn write_status(
    api: &Api<MaintenanceWindow>,
    name: &str,
    status: &lifeguard_api::MaintenanceWindowStatus,
) -> Result<(), Error> {
    let mut body = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    if let Some(fields) = body.as_object_mut() {
        for key in [
            "currentOccurrence",
            "nextOccurrence",
            "workspacesRemaining",
            "workspacesNotified",
        ] {
            fields.entry(key).or_insert(serde_json::Value::Null);
        }
    }
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": body })),
    )
    .await?;
    Ok(())
}

/// A window deleted while it drained leaves its `drain_remaining` series behind, and with
/// it `LifeguardDrainStuck` firing: the reconciler is never called for a deleted window, so
/// the controller's result stream, which reports the missing object, drops the series (and
/// its `workspaces_notified` one).
pub fn forget_deleted<T, E1, E2>(metrics: &Metrics, result: &Result<T, ControllerError<E1, E2>>) {
    let Err(ControllerError::ObjectNotFound(window)) = result else {
        return;
    };
    let _ = metrics
        .workspaces_notified
        .remove_label_values(&[window.name.as_str()]);
    if metrics
        .drain_remaining
        .remove_label_values(&[window.name.as_str()])
        .is_ok()
    {
        tracing::info!(window = %window.name, "window deleted; drain gauge removed");
    }
}

pub fn window_error_policy(
    mw: Arc<MaintenanceWindow>,
    error: &Error,
    ctx: Arc<Context>,
) -> Requeue {
    ctx.metrics
        .reconciles
        .with_label_values(&[error.reason()])
        .inc();
    tracing::warn!(window = %mw.name_any(), %error, "window reconcile failed; retrying");
    Requeue::requeue(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::ObjectRef;

    type Outcome = Result<(), ControllerError<Error, std::io::Error>>;

    #[test]
    fn deleting_a_draining_window_removes_its_gauge_series() {
        let metrics = Metrics::new().expect("registry");
        for (window, remaining) in [("upgrade", 3), ("other", 1)] {
            metrics
                .drain_remaining
                .with_label_values(&[window])
                .set(remaining);
        }
        let still_there: Outcome = Ok(());
        forget_deleted(&metrics, &still_there);
        let failed: Outcome = Err(ControllerError::ReconcilerFailed(
            Error::NoNamespace,
            Box::new(ObjectRef::<MaintenanceWindow>::new("other").erase()),
        ));
        forget_deleted(&metrics, &failed);
        let deleted: Outcome = Err(ControllerError::ObjectNotFound(Box::new(
            ObjectRef::<MaintenanceWindow>::new("upgrade").erase(),
        )));
        forget_deleted(&metrics, &deleted);
        let rendered = metrics.render();
        assert!(
            !rendered.contains(r#"window="upgrade""#),
            "deleted window's series is gone:\n{rendered}"
        );
        assert!(
            rendered.contains(r#"lifeguard_controller_drain_remaining{window="other"} 1"#),
            "a window whose reconcile failed keeps its series:\n{rendered}"
        );
        // Forgetting twice (a second stale requeue) is harmless.
        forget_deleted(&metrics, &deleted);
    }
}
