//! The MaintenanceWindow reconciler's decisions. Pure: the window, the time and what one
//! pass over the workspaces found go in; the status to write, the Event to publish and when
//! to look again come out.
//!
//! The status says whether the spec is valid, whether an occurrence is active, the current
//! and next occurrence, and while the window drains or gives notice, what remains and who
//! was told. While a `drain: true` window is active, covered workspaces are asked to stop
//! until `Drained`.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use lifeguard_api::drain::{covered, is_done};
use lifeguard_api::maintenance::{
    DryRunStatus, OccurrenceStatus, SkippedOccurrenceStatus, condition,
};
use lifeguard_api::names::{DRAINED_BY_ANNOTATION, POSTPONE_DRAIN_ANNOTATION};
use lifeguard_api::postpone::drain_from;
use lifeguard_api::schedule::Occurrence;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, MaintenanceWindowStatus, Workspace};

use super::nodes::NodeTally;
use super::resume::ResumePlan;
use crate::status::set_condition;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drain {
    /// (namespace, name) of covered workspaces not yet asked to stop; after `limit`, only
    /// as many as the budget lets start now.
    pub to_stop: Vec<(String, String)>,
    /// Covered workspaces that have not reached Stopped or Failed
    /// (`lifeguard_api::drain::still_remaining`, the rule the CLI lists them by).
    pub remaining: u32,
    /// Of those, the ones this window asked to stop: their stop is in flight until the
    /// workspace is Stopped, that is until its pod is released (disposal included).
    pub in_flight: u32,
    /// Covered workspaces this window stopped that are done.
    pub drained: u32,
    /// Of the remaining, those not yet asked to stop because their owner postponed the
    /// stop (`lifeguard_api::postpone`) and the postponement has not run out.
    pub postponed: u32,
    /// The first few of those (namespace, name, when their stop starts), for the Event.
    pub postponed_first: Vec<(String, String, Timestamp)>,
    /// When the occurrence being drained opened and when this pass runs: a postponement
    /// counts from the first and is over at the second. `None` (tests of other rules):
    /// nobody is postponed.
    pub clock: Option<DrainClock>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainClock {
    pub occurrence_start: Timestamp,
    pub now: Timestamp,
}

/// Postponed workspaces an Event names at most.
const POSTPONED_NAMED: usize = 10;

impl Drain {
    /// An empty plan for the occurrence that opened at `occurrence_start`, at `now`.
    pub fn at(occurrence_start: Timestamp, now: Timestamp) -> Self {
        Self {
            clock: Some(DrainClock {
                occurrence_start,
                now,
            }),
            ..Self::default()
        }
    }

    /// When `window` stops `ws` if that is after now: its owner postponed the stop.
    fn postponed_until(&self, window: &CompiledWindow, ws: &Workspace) -> Option<Timestamp> {
        let clock = self.clock?;
        let request = ws.annotations().get(POSTPONE_DRAIN_ANNOTATION);
        let from = drain_from(
            clock.occurrence_start,
            request.map(String::as_str),
            window.max_postpone,
        );
        (from > clock.now).then_some(from)
    }

    /// Folds one page of Workspaces into the plan, so a drain over 10,000 workspaces never
    /// holds them all at once.
    /// With `nodes` (a node-scoped window) only workspaces whose pod is on a selected node
    /// are drained, and those this window already asked to stop stay counted wherever
    /// they are.
    pub fn add(
        &mut self,
        window: &CompiledWindow,
        workspaces: &[Workspace],
        namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
        nodes: Option<&NodeTally>,
    ) {
        for ws in workspaces {
            let drained_by = ws.annotations().get(DRAINED_BY_ANNOTATION);
            let ours = drained_by == Some(&window.name);
            if !covered(window, ws, namespace_labels) || !(ours || on_selected_node(ws, nodes)) {
                continue;
            }
            if is_done(ws) {
                self.drained += u32::from(ours);
                continue;
            }
            self.remaining += 1;
            if ours {
                self.in_flight += 1;
            } else if drained_by.is_none() {
                let key = (ws.namespace().unwrap_or_default(), ws.name_any());
                match self.postponed_until(window, ws) {
                    Some(until) => {
                        self.postponed += 1;
                        if self.postponed_first.len() < POSTPONED_NAMED {
                            self.postponed_first.push((key.0, key.1, until));
                        }
                    }
                    None => self.to_stop.push(key),
                }
            }
        }
    }

    /// Keeps only the stops the budget lets start beside those in flight (none while the
    /// drain is paused, none for a `Warn` or `DryRun` window, which only counts them), once
    /// every page is in: a percentage needs the whole count.
    pub fn limit(&mut self, window: &CompiledWindow) {
        if !window.enforces() {
            self.to_stop.clear();
            return;
        }
        let total = self.drained + self.remaining;
        if let Some(may_start) = window
            .budget
            .may_start(total, self.in_flight, window.drain_paused)
        {
            self.to_stop.truncate(may_start as usize);
        }
    }
}

/// Whether `ws`'s pod is on a node the window selects; every workspace without a node scope.
pub fn on_selected_node(ws: &Workspace, nodes: Option<&NodeTally>) -> bool {
    let Some(nodes) = nodes else { return true };
    ws.status
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|node| nodes.selects(node))
}

/// Whether `window` drains at `now`; only then is there a plan to build.
pub fn draining(window: &CompiledWindow, now: Timestamp) -> bool {
    window.drain && window.active_at(now).is_some()
}

/// `None` when the window is not draining at `now`.
pub fn drain(
    window: &CompiledWindow,
    workspaces: &[Workspace],
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
    nodes: Option<&NodeTally>,
    now: Timestamp,
) -> Option<Drain> {
    if !draining(window, now) {
        return None;
    }
    let mut plan = Drain::default();
    plan.add(window, workspaces, namespace_labels, nodes);
    plan.limit(window);
    Some(plan)
}

/// Skipped occurrences a status lists at most (an hourly window excluded for a week
/// would list 168).
const MAX_SKIPPED_LISTED: usize = 10;

/// How often a draining window is looked at again, to count what remains.
pub const DRAINING_POLL: Duration = Duration::from_secs(2);
/// How often an idle window is looked at again, if nothing changes before.
pub const IDLE_POLL: Duration = Duration::from_secs(300);
/// While a window gives notice, how often the count of notified workspaces is refreshed.
pub const NOTICE_POLL: Duration = Duration::from_secs(5);

/// The first half of a window's plan, before the workspaces are looked at: whether the spec
/// compiles, and if it does, what its schedule says at `now`.
pub enum SpecCheck {
    /// The spec does not compile: the status says why; look again in `IDLE_POLL`.
    Invalid(Box<MaintenanceWindowStatus>),
    Valid(Box<ValidWindow>),
}

pub struct ValidWindow {
    pub window: CompiledWindow,
    /// Valid, active and the occurrences; the survey's fields still as they were.
    pub status: MaintenanceWindowStatus,
    /// When the schedule or the notice next changes, at most `IDLE_POLL`.
    pub requeue: Duration,
    /// Whether to survey the workspaces: to drain them, to count who was told.
    pub draining: bool,
    pub noticing: bool,
    /// Whether the window is active and node-scoped: its selected nodes are tallied and
    /// marked.
    pub node_scoped: bool,
    /// Whether the status said Drained before this pass (only a new one is announced).
    pub was_drained: bool,
    /// When this pass runs.
    pub now: Timestamp,
    /// Whether to look for drained workspaces to start again (`resume::resuming`).
    pub resuming: bool,
}

/// What one pass over the Workspaces found for a window.
#[derive(Debug, Default)]
pub struct Survey {
    /// While draining.
    pub drain: Option<Drain>,
    /// While the window gives notice: workspaces that carry it.
    pub notified: Option<u32>,
    /// While a node-scoped window is active: what is left on each selected node.
    pub nodes: Option<NodeTally>,
    /// With `resumeAfter`, between occurrences: what it drained to start again.
    pub resume: Option<ResumePlan>,
}

impl Survey {
    /// An empty survey, with a tally for each thing `valid` asks to be counted.
    /// `nodes` is the tally of the selected nodes when `valid.node_scoped`.
    pub fn for_window(valid: &ValidWindow, nodes: Option<NodeTally>) -> Self {
        Self {
            drain: valid
                .draining
                .then(|| match &valid.status.current_occurrence {
                    Some(o) => Drain::at(o.start.0, valid.now),
                    None => Drain::default(),
                }),
            notified: valid.noticing.then_some(0),
            nodes: nodes.filter(|_| valid.node_scoped),
            resume: valid.resuming.then(|| ResumePlan::at(valid.now)),
        }
    }

    /// Whether there is anything to look at the workspaces for.
    pub fn wanted(&self) -> bool {
        self.drain.is_some()
            || self.notified.is_some()
            || self.nodes.is_some()
            || self.resume.is_some()
    }

    /// Folds one page of Workspaces in.
    pub fn add(
        &mut self,
        window: &CompiledWindow,
        page: &[Workspace],
        namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
    ) {
        if let Some(drain) = self.drain.as_mut() {
            drain.add(window, page, namespace_labels, self.nodes.as_ref());
        }
        if let Some(resume) = self.resume.as_mut() {
            resume.add(window, page);
        }
        if let Some(nodes) = self.nodes.as_mut() {
            for ws in page {
                let node = ws.status.as_ref().and_then(|s| s.node_name.as_deref());
                if let Some(node) = node
                    && covered(window, ws, namespace_labels)
                    && !is_done(ws)
                {
                    nodes.count(node);
                }
            }
        }
        if let Some(count) = self.notified.as_mut() {
            *count += page
                .iter()
                .filter(|ws| carries_notice_of(ws, &window.name))
                .count() as u32;
        }
    }
}

fn carries_notice_of(ws: &Workspace, window: &str) -> bool {
    ws.status
        .as_ref()
        .and_then(|s| s.maintenance_notice.as_ref())
        .is_some_and(|n| n.window == window)
}

fn occurrence(o: Occurrence) -> OccurrenceStatus {
    OccurrenceStatus {
        start: Time(o.start),
        end: Time(o.end),
    }
}

/// The status a window's spec and schedule give at `now`.
pub fn check_spec(mw: &MaintenanceWindow, now: Timestamp) -> SpecCheck {
    let generation = mw.metadata.generation;
    let mut status = mw.status.clone().unwrap_or_default();
    let window = match CompiledWindow::compile(mw) {
        Ok(window) => window,
        Err(errors) => {
            // Stored before the webhook could refuse it: say so where the operator looks.
            set_condition(
                &mut status.conditions,
                condition::VALID,
                false,
                condition::REASON_INVALID_SPEC,
                &errors.to_string(),
                generation,
                now,
            );
            status.active = false;
            return SpecCheck::Invalid(Box::new(status));
        }
    };
    set_condition(
        &mut status.conditions,
        condition::VALID,
        true,
        condition::REASON_VALID,
        "the spec is valid",
        generation,
        now,
    );
    let active = window.active_at(now);
    status.active = active.is_some();
    status.current_occurrence = active.map(occurrence);
    status.next_occurrence = window.next_after(now, 1).first().copied().map(occurrence);
    status.skipped_occurrences = window
        .skipped_until_next(now, MAX_SKIPPED_LISTED)
        .into_iter()
        .map(|u| SkippedOccurrenceStatus {
            start: Time(u.occurrence.start),
            end: Time(u.occurrence.end),
            reason: u.skipped_by.and_then(|e| e.reason),
        })
        .collect();
    status.observed_generation = generation;
    let until_change = [window.next_change(now), window.next_notice_change(now)]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t.duration_since(now).unsigned_abs())
        .unwrap_or(IDLE_POLL);
    let was_drained = status
        .conditions
        .iter()
        .any(|c| c.type_ == condition::DRAINED && c.status == "True");
    SpecCheck::Valid(Box::new(ValidWindow {
        draining: draining(&window, now),
        resuming: super::resume::resuming(&window, now),
        noticing: window.noticed_occurrence(now).is_some(),
        node_scoped: window.node_scoped() && window.active_at(now).is_some(),
        requeue: until_change.clamp(Duration::from_secs(1), IDLE_POLL),
        window,
        status,
        was_drained,
        now,
    }))
}

/// The status to write once the survey is in, when to look again, and the note of the
/// `Drained` Event when the drain has just finished.
pub struct Settled {
    pub status: MaintenanceWindowStatus,
    pub requeue: Duration,
    pub drained_note: Option<String>,
}

/// Completes `valid`'s status with what `survey` found.
pub fn settle(
    valid: ValidWindow,
    survey: &Survey,
    generation: Option<i64>,
    now: Timestamp,
) -> Settled {
    let ValidWindow {
        mut status,
        mut requeue,
        was_drained,
        window,
        ..
    } = valid;
    let valid_enforces = window.enforces();
    status.workspaces_notified = survey.notified;
    // A `Warn` or `DryRun` window tallies its nodes (for what it would drain) but marks
    // and lists none: nothing is steered off them.
    status.nodes = survey
        .nodes
        .as_ref()
        .filter(|_| valid_enforces)
        .map(NodeTally::status)
        .unwrap_or_default();
    if survey.nodes.is_some() {
        // The nodes' drained labels follow what is left on them, drain or not.
        requeue = requeue.min(DRAINING_POLL);
    }
    if survey.notified.is_some() {
        requeue = requeue.min(NOTICE_POLL);
    }
    status.workspaces_resuming = survey
        .resume
        .as_ref()
        .map(ResumePlan::outstanding)
        .filter(|n| *n > 0);
    if status.workspaces_resuming.is_some() {
        requeue = requeue.min(DRAINING_POLL);
    }
    let mut drained_note = None;
    status.dry_run = None;
    match &survey.drain {
        Some(drain) if !valid_enforces => {
            // Tried, not enforced: what the drain would be stopping, nothing else.
            status.dry_run = Some(DryRunStatus {
                would_drain: drain.remaining,
            });
            status.workspaces_remaining = None;
            status.workspaces_drained = None;
            status.workspaces_in_flight = None;
            status.workspaces_postponed = None;
            status.conditions.retain(|c| c.type_ != condition::DRAINED);
            requeue = requeue.min(DRAINING_POLL);
        }
        Some(drain) => {
            status.workspaces_remaining = Some(drain.remaining);
            status.workspaces_drained = Some(drain.drained);
            status.workspaces_in_flight = Some(drain.in_flight + drain.to_stop.len() as u32);
            status.workspaces_postponed = Some(drain.postponed).filter(|n| *n > 0);
            let drained = drain.remaining == 0;
            let message = if drained {
                "every covered workspace has stopped".to_string()
            } else {
                match drain.postponed {
                    0 => format!("{} covered workspaces still running", drain.remaining),
                    postponed => format!(
                        "{} covered workspaces still running, {postponed} of them postponed by their owner",
                        drain.remaining
                    ),
                }
            };
            set_condition(
                &mut status.conditions,
                condition::DRAINED,
                drained,
                if drained {
                    condition::REASON_DRAINED
                } else {
                    condition::REASON_DRAINING
                },
                &message,
                generation,
                now,
            );
            if drained && !was_drained {
                drained_note = Some(message);
            }
            requeue = requeue.min(DRAINING_POLL);
        }
        None => {
            status.workspaces_remaining = None;
            status.workspaces_drained = None;
            status.workspaces_in_flight = None;
            status.workspaces_postponed = None;
            status.conditions.retain(|c| c.type_ != condition::DRAINED);
        }
    }
    Settled {
        status,
        requeue,
        drained_note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn window(spec: Value) -> CompiledWindow {
        let w: MaintenanceWindow =
            serde_json::from_value(json!({"metadata": {"name": "upgrade"}, "spec": spec}))
                .expect("window");
        CompiledWindow::compile(&w).expect("valid")
    }

    fn ws(
        ns: &str,
        name: &str,
        phase: Option<&str>,
        labels: Value,
        annotations: Value,
    ) -> Workspace {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
            "spec": {"podTemplate": {}},
            "status": phase.map(|p| json!({"phase": p}))
        }))
        .expect("workspace")
    }

    #[test]
    fn drain_stops_covered_running_workspaces_and_counts_what_remains() {
        let now: Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
        let draining = window(
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true,
            "namespaceSelector": {"matchLabels": {"env": "dev"}}}),
        );
        let namespaces = BTreeMap::from([
            (
                "dev".to_string(),
                BTreeMap::from([("env".to_string(), "dev".to_string())]),
            ),
            (
                "prod".to_string(),
                BTreeMap::from([("env".to_string(), "prod".to_string())]),
            ),
        ]);
        let workspaces = vec![
            ws("dev", "running", Some("Running"), json!({}), json!({})),
            ws(
                "dev",
                "stopping",
                Some("Stopping"),
                json!({}),
                json!({DRAINED_BY_ANNOTATION: "upgrade"}),
            ),
            ws(
                "dev",
                "stopped",
                Some("Stopped"),
                json!({}),
                json!({DRAINED_BY_ANNOTATION: "upgrade"}),
            ),
            ws("dev", "failed", Some("Failed"), json!({}), json!({})),
            ws("dev", "new", None, json!({}), json!({})),
            ws(
                "prod",
                "other-namespace",
                Some("Running"),
                json!({}),
                json!({}),
            ),
        ];
        let plan = drain(&draining, &workspaces, &namespaces, None, now).expect("draining");
        assert_eq!(
            plan.to_stop,
            vec![
                ("dev".to_string(), "running".to_string()),
                ("dev".to_string(), "new".to_string())
            ]
        );
        assert_eq!(plan.remaining, 3, "running, stopping and new remain");

        let no_drain =
            window(json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z"}));
        assert_eq!(
            super::drain(&no_drain, &workspaces, &namespaces, None, now),
            None
        );
        let later: Timestamp = "2026-12-01T23:30:00Z".parse().expect("time");
        assert_eq!(
            super::drain(&draining, &workspaces, &namespaces, None, later),
            None,
            "not after the window"
        );
    }

    fn valid(spec: Value, status: Value, now: Timestamp) -> ValidWindow {
        let mw: MaintenanceWindow = serde_json::from_value(
            json!({"metadata": {"name": "upgrade", "generation": 2}, "spec": spec, "status": status}),
        )
        .expect("window literal");
        match check_spec(&mw, now) {
            SpecCheck::Valid(valid) => *valid,
            SpecCheck::Invalid(status) => panic!("invalid: {status:?}"),
        }
    }

    #[test]
    fn an_invalid_spec_says_why_and_is_not_active() {
        let mw: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": "broken"},
            "spec": {"schedule": "not cron", "duration": "1h"},
            "status": {"active": true},
        }))
        .expect("window literal");
        let now: Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
        let SpecCheck::Invalid(status) = check_spec(&mw, now) else {
            panic!("a bad schedule is invalid");
        };
        assert!(!status.active);
        let valid = status
            .conditions
            .iter()
            .find(|c| c.type_ == condition::VALID)
            .map(|c| (c.status.as_str(), c.reason.as_str()));
        assert_eq!(valid, Some(("False", condition::REASON_INVALID_SPEC)));
    }

    #[test]
    fn the_survey_settles_the_drain_the_notice_count_and_when_to_look_again() {
        let spec =
            json!({"start": "2026-12-01T22:00:00Z", "end": "2026-12-01T23:00:00Z", "drain": true});
        let during: Timestamp = "2026-12-01T22:30:00Z".parse().expect("time");
        let before: Timestamp = "2026-12-01T20:00:00Z".parse().expect("time");
        let drained_status = json!({"conditions": [{"type": "Drained", "status": "True",
            "reason": "Drained", "message": "every covered workspace has stopped",
            "lastTransitionTime": "2026-12-01T22:10:00Z"}]});
        let drain = |remaining| Survey {
            drain: Some(Drain {
                remaining,
                ..Drain::default()
            }),
            notified: None,
            nodes: None,
            resume: None,
        };
        // (what, window, survey, want: remaining, Drained condition, Event?, requeue at most)
        type Want = (
            Option<u32>,
            Option<(&'static str, &'static str)>,
            bool,
            Duration,
        );
        let cases: Vec<(&str, ValidWindow, Survey, Want)> = vec![
            (
                "draining, two left",
                valid(spec.clone(), json!({}), during),
                drain(2),
                (Some(2), Some(("False", "Draining")), false, DRAINING_POLL),
            ),
            (
                "drained just now: announced",
                valid(spec.clone(), json!({}), during),
                drain(0),
                (Some(0), Some(("True", "Drained")), true, DRAINING_POLL),
            ),
            (
                "still drained: not announced again",
                valid(spec.clone(), drained_status.clone(), during),
                drain(0),
                (Some(0), Some(("True", "Drained")), false, DRAINING_POLL),
            ),
            (
                "not draining: the count and the condition go",
                valid(spec.clone(), drained_status, before),
                Survey::default(),
                (None, None, false, IDLE_POLL),
            ),
            (
                "giving notice: counted often",
                valid(spec.clone(), json!({}), before),
                Survey {
                    drain: None,
                    notified: Some(3),
                    nodes: None,
                    resume: None,
                },
                (None, None, false, NOTICE_POLL),
            ),
        ];
        for (what, window, survey, want) in cases {
            let now = if window.status.active { during } else { before };
            let settled = settle(window, &survey, Some(2), now);
            let drained = settled
                .status
                .conditions
                .iter()
                .find(|c| c.type_ == condition::DRAINED)
                .map(|c| (c.status.as_str(), c.reason.as_str()));
            assert_eq!(settled.status.workspaces_remaining, want.0, "{what}");
            assert_eq!(drained, want.1, "{what}");
            assert_eq!(settled.drained_note.is_some(), want.2, "{what}");
            assert!(settled.requeue <= want.3, "{what}: {:?}", settled.requeue);
            assert_eq!(
                settled.status.workspaces_notified, survey.notified,
                "{what}"
            );
        }
    }
}

#[cfg(test)]
#[path = "plan_budget_tests.rs"]
pub(crate) mod plan_budget_tests;

#[cfg(test)]
#[path = "plan_enforcement_tests.rs"]
mod enforcement_tests;

#[cfg(test)]
#[path = "plan_postpone_tests.rs"]
mod plan_postpone_tests;
