//! The MaintenanceWindow reconciler's I/O: reads the namespaces and, a page at a time, the
//! Workspaces a window surveys; asks `plan`; marks the workspaces to stop, writes the
//! status and the metrics, and publishes `Drained`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action as Requeue;
use kube::runtime::controller::Error as ControllerError;
use kube::runtime::events::EventType;
use lifeguard_api::names::{DRAINED_BY_ANNOTATION, DRAINED_UNTIL_ANNOTATION, RESUME_ANNOTATION};
use lifeguard_api::{MaintenanceWindow, Workspace};
use lifeguard_runtime::pages::Pages;
use serde_json::json;

use super::nodes::{NodeMeta, NodeTally};
use super::pacing::{self, LastSurvey, SurveyPacer};
use super::plan::{self, IDLE_POLL, SpecCheck, Survey, ValidWindow};
use super::resume::ResumePlan;
use super::survey_index::{self, SurveySource};
use super::{gate_answers, hold_decision, node_signal};
use crate::metrics::Metrics;
use crate::{Context, Error, FIELD_MANAGER};

/// Workspaces per page: a drain re-plans every two seconds, and a full list of 10,000
/// workspaces each time would cost tens of megabytes per pass.
const PAGE: u32 = 200;

/// One pass over the Workspaces serves the drain, the count of notified ones and the
/// per-node tally: from the controller's watch where that serves (`survey_index`), else
/// listed.
async fn survey(
    ctx: &Context,
    valid: &ValidWindow,
    nodes: &[NodeMeta],
) -> Result<(Survey, SurveySource), Error> {
    let empty = || {
        let tally = valid
            .node_scoped
            .then(|| NodeTally::for_nodes(&valid.window, nodes));
        Survey::for_window(valid, tally)
    };
    let mut survey = empty();
    if !survey.wanted() {
        return Ok((survey, SurveySource::List));
    }
    let wants_namespaces = valid.draining || valid.node_scoped;
    // Namespace labels listed for this survey: kept for a survey taken again from a list.
    let mut listed = None;
    if survey_index::may_use_index(&survey) {
        // Progress from the watch takes the namespaces' labels from the controller's
        // namespace watch as well: both lag alike, and a survey that a promise is made
        // from is taken again below with both listed.
        let namespaces = if !wants_namespaces {
            Cow::Owned(BTreeMap::new())
        } else if let Some(watched) = ctx.namespaces.all() {
            Cow::Owned(watched)
        } else {
            Cow::Borrowed(&*listed.insert(crate::namespaces::list_labels(&ctx.client).await?))
        };
        let indexed = ctx.survey_index.fold_pages(PAGE as usize, |page| {
            survey.add(&valid.window, page, &namespaces)
        });
        if indexed && !survey_index::needs_list(&survey, &valid.window.name, nodes) {
            return Ok((limited(survey, valid), SurveySource::Watch));
        }
        survey = empty();
    }
    let namespaces = match listed {
        Some(listed) => listed,
        None if wants_namespaces => crate::namespaces::list_labels(&ctx.client).await?,
        None => BTreeMap::new(),
    };
    let api = Api::<Workspace>::all(ctx.client.clone());
    let mut pages = Pages::new(ListParams::default().limit(PAGE));
    while let Some(page) = pages.next(&api).await? {
        survey.add(&valid.window, &page, &namespaces);
    }
    Ok((limited(survey, valid), SurveySource::List))
}

/// The survey once every Workspace is in: what the budget lets start.
fn limited(mut survey: Survey, valid: &ValidWindow) -> Survey {
    if let Some(drain) = survey.drain.as_mut() {
        drain.limit(&valid.window);
    }
    if let Some(resume) = survey.resume.as_mut() {
        resume.limit(&valid.window);
    }
    survey
}

/// A Normal Event about the window.
async fn window_event(ctx: &Context, mw: &MaintenanceWindow, reason: &str, note: String) {
    ctx.event(mw, EventType::Normal, reason, note).await;
}

pub async fn reconcile_window(
    mw: Arc<MaintenanceWindow>,
    ctx: Arc<Context>,
) -> Result<Requeue, Error> {
    let windows: Api<MaintenanceWindow> = Api::all(ctx.client.clone());
    let name = mw.name_any();
    // Woken again soon after a survey (a stop ended, its own status write, the poll):
    // look once the survey's pause is over (`pacing`).
    if let Some(wait) = ctx
        .surveys
        .wait(&name, mw.metadata.generation, Instant::now())
    {
        return Ok(Requeue::requeue(wait));
    }
    let now = Timestamp::now();
    let valid = match plan::check_spec(&mw, now) {
        SpecCheck::Invalid(status) => {
            // Not enforced, so it marks no node.
            let marked = node_signal::list(&ctx.client, false).await?;
            node_signal::apply(&ctx.client, &name, None, &marked).await?;
            write_status(&windows, &name, &status).await?;
            return Ok(Requeue::requeue(IDLE_POLL));
        }
        SpecCheck::Valid(valid) => *valid,
    };
    // Sent before this pass acts, so a start precedes its drain stops; a pass that fails
    // before its status is stored sends them again next time, with the same ids.
    let before = mw
        .status
        .as_ref()
        .and_then(|s| s.current_occurrence.as_ref());
    let after = valid.status.current_occurrence.as_ref();
    let message = valid.window.message.as_deref();
    for doc in crate::notify::document::window_transitions(&name, message, before, after, now) {
        ctx.notify.send(doc);
    }
    let nodes = node_signal::list(&ctx.client, valid.node_scoped).await?;
    let stops_ended_before = ctx.surveys.survey_starting(&name);
    let surveying = Instant::now();
    let (mut survey, source) = survey(&ctx, &valid, &nodes).await?;
    let took = surveying.elapsed();
    let mut last = LastSurvey {
        ended: Instant::now(),
        took: if survey.wanted() {
            took
        } else {
            Duration::ZERO
        },
        generation: mw.metadata.generation,
        stops_ended_before,
        awaiting: None,
        waiting: false,
    };
    ctx.surveys.record(&name, last);
    if survey.wanted() {
        ctx.metrics
            .window_surveys
            .with_label_values(&[source.as_str()])
            .observe(took.as_secs_f64());
    }
    // A gate that holds leaves the drain no new stop (`hold_decision.rs`).
    let kept_hold = mw.status.as_ref().and_then(|s| s.hold.as_ref());
    let hold = gate_answers::hold_drain(&ctx, &valid, &mut survey, kept_hold, now).await?;
    // Known only now that a hold has had its say: whether the drain's last stops are all
    // in flight, so that the end of the last one is surveyed at once (`pacing`).
    last.awaiting = survey.drain.as_ref().and_then(pacing::stops_awaited);
    last.waiting = survey.drain.as_ref().is_some_and(pacing::stops_waiting);
    if last.awaiting.is_some() || last.waiting {
        ctx.surveys.record(&name, last);
    }
    let max_hold = valid.window.gates.as_ref().and_then(|g| g.max_hold);
    if let Some(drain) = &survey.drain {
        // Marked MARKS_IN_FLIGHT at a time, not one after another: a drain of thousands
        // of workspaces otherwise waits a round trip per workspace before the last one
        // even starts to stop. A failed mark fails the pass (after the others are done),
        // which marks what is left again.
        let (ctx, valid, name) = (&ctx, &valid, &name);
        let marks: Vec<Result<(), Error>> = futures::stream::iter(drain.to_stop.iter().cloned())
            .map(|(namespace, ws)| async move {
                mark_drained(ctx, valid, name, &namespace, &ws, now).await
            })
            .buffer_unordered(MARKS_IN_FLIGHT)
            .collect()
            .await;
        marks.into_iter().collect::<Result<Vec<()>, Error>>()?;
    }
    if let Some(note) = newly_postponed(&mw, &survey, valid.window.enforces()) {
        window_event(&ctx, &mw, "DrainPostponed", note).await;
    }
    if let Some(resume) = &survey.resume {
        ask_to_resume(&ctx, &mw, &name, resume).await?;
    }
    // A `Warn` or `DryRun` window marks no node (and clears marks left from `Enforce`).
    if valid.window.enforces()
        && let Some(tally) = survey.nodes.as_mut()
    {
        node_signal::complete_tally(&ctx, &name, tally, &nodes, now).await?;
    }
    let marked = survey.nodes.as_ref().filter(|_| valid.window.enforces());
    let drained_nodes = node_signal::apply(&ctx.client, &name, marked, &nodes).await?;
    for node in drained_nodes {
        window_event(
            &ctx,
            &mw,
            "NodeDrained",
            format!("nothing lifeguard holds is left on node {node} for this window or any other that drains it; it is labelled lifeguard.dev/drained=true"),
        )
        .await;
    }
    record_metrics(&ctx.metrics, &name, valid.window.enforces(), &survey);
    gate_answers::record(&ctx, &mw, hold.as_ref(), max_hold).await;
    let mut settled = plan::settle(valid, &survey, mw.metadata.generation, now);
    hold_decision::settle(
        &mut settled.status,
        hold.as_ref(),
        max_hold,
        mw.metadata.generation,
        now,
    );
    if Some(&settled.status) != mw.status.as_ref() {
        write_status(&windows, &name, &settled.status).await?;
    }
    if let Some(note) = settled.drained_note {
        window_event(&ctx, &mw, "Drained", note).await;
    }
    Ok(Requeue::requeue(settled.requeue))
}

/// How many drain marks one window pass has in flight at once: the reconciler's own
/// default concurrency.
const MARKS_IN_FLIGHT: usize = 16;

/// Marks one workspace as drained by window `name` (the workspace reconciler then stops
/// it), and notifies outside the cluster.
async fn mark_drained(
    ctx: &Context,
    valid: &ValidWindow,
    name: &str,
    namespace: &str,
    ws: &str,
    now: Timestamp,
) -> Result<(), Error> {
    let api: Api<Workspace> = Api::namespaced(ctx.client.clone(), namespace);
    // The occurrence's end goes with the mark: a resumeAfter window restarts the
    // workspace once that instant has passed (`lifeguard_api::resume`).
    let until = valid
        .status
        .current_occurrence
        .as_ref()
        .map(|o| o.end.0.to_string());
    let patch = json!({"metadata": {"annotations": {
        DRAINED_BY_ANNOTATION: name,
        DRAINED_UNTIL_ANNOTATION: until,
    }}});
    let asked = api
        .patch(ws, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    ctx.survey_index.note_marked(namespace, ws, name);
    tracing::info!(window = %name, workspace = %ws, %namespace, "draining workspace");
    if let Some(occurrence) = &valid.status.current_occurrence {
        let message = valid.window.message.as_deref();
        let doc = crate::notify::document::drain_stop(name, message, occurrence, &asked, now);
        ctx.notify.send(doc);
    }
    Ok(())
}

/// Swaps the drained marks of the workspaces `resume` names for a resume request (the
/// workspace reconciler then starts each again), and says who with one Event.
async fn ask_to_resume(
    ctx: &Context,
    mw: &MaintenanceWindow,
    name: &str,
    resume: &ResumePlan,
) -> Result<(), Error> {
    for (namespace, ws, request) in &resume.to_resume {
        let api: Api<Workspace> = Api::namespaced(ctx.client.clone(), namespace);
        let patch = json!({"metadata": {"annotations": {
            DRAINED_BY_ANNOTATION: null,
            DRAINED_UNTIL_ANNOTATION: null,
            RESUME_ANNOTATION: request,
        }}});
        api.patch(ws, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        tracing::info!(window = %name, workspace = %ws, %namespace, "resuming workspace");
    }
    if !resume.to_resume.is_empty() {
        let names: Vec<String> = resume
            .to_resume
            .iter()
            .take(10)
            .map(|(namespace, ws, _)| format!("{namespace}/{ws}"))
            .collect();
        window_event(
            ctx,
            mw,
            "WorkspacesResumed",
            format!(
                "the occurrence is over; {} drained workspaces start again: {}",
                resume.to_resume.len(),
                names.join(", ")
            ),
        )
        .await;
    }
    Ok(())
}

/// The note of a `DrainPostponed` Event when more workspaces are postponed than the stored
/// status said: who, and when each is stopped.
fn newly_postponed(mw: &MaintenanceWindow, survey: &Survey, enforces: bool) -> Option<String> {
    let drain = survey.drain.as_ref().filter(|_| enforces)?;
    let before = mw
        .status
        .as_ref()
        .and_then(|s| s.workspaces_postponed)
        .unwrap_or(0);
    if drain.postponed <= before {
        return None;
    }
    let named: Vec<String> = drain
        .postponed_first
        .iter()
        .map(|(namespace, name, until)| format!("{namespace}/{name} until {until}"))
        .collect();
    let more = drain.postponed as usize - named.len();
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "{} covered workspaces postponed their stop by their owner's request (spec.maxPostpone): {}{tail}",
        drain.postponed,
        named.join(", ")
    ))
}

/// The drain and notice gauges follow the survey; a tally not taken drops its series.
/// A `Warn` or `DryRun` window (`enforces` false) reports `would_drain` instead.
fn record_metrics(metrics: &Metrics, window: &str, enforces: bool, survey: &Survey) {
    match survey.notified {
        Some(count) => metrics
            .workspaces_notified
            .with_label_values(&[window])
            .set(i64::from(count)),
        None => {
            let _ = metrics.workspaces_notified.remove_label_values(&[window]);
        }
    }
    match &survey.drain {
        Some(drain) if !enforces => {
            metrics
                .would_drain
                .with_label_values(&[window])
                .set(i64::from(drain.remaining));
            let _ = metrics.drain_remaining.remove_label_values(&[window]);
            let _ = metrics.drain_in_flight.remove_label_values(&[window]);
            let _ = metrics.drain_postponed.remove_label_values(&[window]);
        }
        Some(drain) => {
            metrics
                .drain_postponed
                .with_label_values(&[window])
                .set(i64::from(drain.postponed));
            let _ = metrics.would_drain.remove_label_values(&[window]);
            metrics
                .drain_remaining
                .with_label_values(&[window])
                .set(i64::from(drain.remaining));
            metrics
                .drain_in_flight
                .with_label_values(&[window])
                .set(i64::from(drain.in_flight) + drain.to_stop.len() as i64);
        }
        None => {
            let _ = metrics.drain_remaining.remove_label_values(&[window]);
            let _ = metrics.drain_in_flight.remove_label_values(&[window]);
            let _ = metrics.drain_postponed.remove_label_values(&[window]);
            let _ = metrics.would_drain.remove_label_values(&[window]);
        }
    }
}

async fn write_status(
    api: &Api<MaintenanceWindow>,
    name: &str,
    status: &lifeguard_api::MaintenanceWindowStatus,
) -> Result<(), Error> {
    lifeguard_runtime::status::apply(api, name, FIELD_MANAGER, status).await?;
    Ok(())
}

/// A window deleted while it drained leaves its `drain_remaining` series behind, and with
/// it `LifeguardDrainStuck` firing: the reconciler is never called for a deleted window, so
/// the controller's result stream, which reports the missing object, drops the series (and
/// its `workspaces_notified` one), and the window's last survey (`pacing`).
pub fn forget_deleted<T, E1, E2>(
    metrics: &Metrics,
    surveys: &SurveyPacer,
    result: &Result<T, ControllerError<E1, E2>>,
) {
    let Err(ControllerError::ObjectNotFound(window)) = result else {
        return;
    };
    surveys.forget(&window.name);
    let _ = metrics
        .workspaces_notified
        .remove_label_values(&[window.name.as_str()]);
    let _ = metrics
        .drain_in_flight
        .remove_label_values(&[window.name.as_str()]);
    let _ = metrics
        .would_drain
        .remove_label_values(&[window.name.as_str()]);
    let _ = metrics
        .drain_postponed
        .remove_label_values(&[window.name.as_str()]);
    for gate in ["prometheus", "pods"] {
        let _ = metrics
            .drain_held
            .remove_label_values(&[window.name.as_str(), gate]);
    }
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
    ctx.retry_after(error, "MaintenanceWindow", &mw.name_any())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::ObjectRef;

    type Outcome = Result<(), ControllerError<Error, std::io::Error>>;

    #[test]
    fn deleting_a_draining_window_removes_its_gauge_series() {
        let metrics = Metrics::new().expect("registry");
        let surveys = SurveyPacer::default();
        let surveyed = LastSurvey {
            ended: std::time::Instant::now(),
            took: std::time::Duration::from_secs(1),
            generation: Some(1),
            stops_ended_before: 0,
            awaiting: None,
            waiting: false,
        };
        surveys.record("upgrade", surveyed);
        for (window, remaining) in [("upgrade", 3), ("other", 1)] {
            metrics
                .drain_remaining
                .with_label_values(&[window])
                .set(remaining);
            metrics.drain_in_flight.with_label_values(&[window]).set(1);
        }
        let still_there: Outcome = Ok(());
        forget_deleted(&metrics, &surveys, &still_there);
        let failed: Outcome = Err(ControllerError::ReconcilerFailed(
            Error::NoNamespace,
            Box::new(ObjectRef::<MaintenanceWindow>::new("other").erase()),
        ));
        forget_deleted(&metrics, &surveys, &failed);
        let deleted: Outcome = Err(ControllerError::ObjectNotFound(Box::new(
            ObjectRef::<MaintenanceWindow>::new("upgrade").erase(),
        )));
        forget_deleted(&metrics, &surveys, &deleted);
        let rendered = metrics.render();
        assert!(
            !rendered.contains(r#"window="upgrade""#),
            "deleted window's series is gone:\n{rendered}"
        );
        assert!(
            rendered.contains(r#"lifeguard_controller_drain_remaining{window="other"} 1"#),
            "a window whose reconcile failed keeps its series:\n{rendered}"
        );
        assert!(
            rendered.contains(r#"lifeguard_controller_drain_in_flight{window="other"} 1"#),
            "its in-flight series too:\n{rendered}"
        );
        assert_eq!(
            surveys.wait("upgrade", Some(1), surveyed.ended),
            None,
            "its last survey is forgotten"
        );
        // Forgetting twice (a second stale requeue) is harmless.
        forget_deleted(&metrics, &surveys, &deleted);
    }
}
