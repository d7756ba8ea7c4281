//! A MaintenanceWindow made ready for fast decisions: schedule parsed and selectors compiled
//! once per change of the object, so admission and drain checks do no parsing.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::core::{ParseExpressionError, Selector, SelectorExt};

use crate::MaintenanceWindow;
use crate::exclusion::{Exclusions, Upcoming};
use crate::field_errors::ValidationErrors;
use crate::hold::Gates;
use crate::maintenance::Enforcement;
use crate::node_scope::{self, Budget};
use crate::schedule::{Occurrence, Schedule};

#[derive(Debug, Clone)]
pub struct CompiledWindow {
    pub name: String,
    pub message: Option<String>,
    pub drain: bool,
    pub allow_recreation: bool,
    pub suspend: bool,
    /// How long before each drain occurrence covered workspaces are told (`spec.notice`).
    pub notice: Option<SignedDuration>,
    /// With `drain`: at most this many stops in flight (`spec.maxConcurrentDrains`).
    pub budget: Budget,
    /// With `drain`: no new stops start (`spec.drainPaused`).
    pub drain_paused: bool,
    /// `spec.nodeSelector` as written, for the node affinity that keeps pods off the nodes.
    pub node_label_selector: Option<LabelSelector>,
    /// `spec.enforcement`: only `Enforce` denies, steers and drains.
    pub enforcement: Enforcement,
    /// With `drain`: what holds it (`spec.holdWhile`, `spec.maxHold`).
    pub gates: Option<Gates>,
    /// With `drain`: the longest an owner may postpone a workspace's stop
    /// (`spec.maxPostpone`, `crate::postpone`).
    pub max_postpone: Option<SignedDuration>,
    /// With `drain`: restart what each occurrence drained once it is over
    /// (`spec.resumeAfter`, `crate::resume`).
    pub resume_after: bool,
    schedule: Schedule,
    exclusions: Exclusions,
    node_selector: Option<Selector>,
    namespace_selector: Selector,
    workspace_selector: Selector,
}

impl CompiledWindow {
    /// Fails with the same messages the webhook gives for an invalid window.
    pub fn compile(window: &MaintenanceWindow) -> Result<Self, ValidationErrors> {
        let spec = &window.spec;
        let schedule = spec.schedule()?;
        let exclusions = spec.exclusions()?;
        let notice = spec.notice_period()?;
        let gates = crate::hold::compile(spec)?;
        let max_postpone = crate::postpone::compile_max(spec, Some(&schedule))?;
        crate::resume::validate(spec)?;
        let scope_errors = node_scope::validate(spec);
        if !scope_errors.0.is_empty() {
            return Err(scope_errors);
        }
        let budget = node_scope::parse_budget(spec.max_concurrent_drains.as_ref())
            .map_err(|e| ValidationErrors::single("spec.maxConcurrentDrains", e))?;
        let selector = |field: &str, s: &Option<LabelSelector>| match s.clone() {
            None => Ok(Selector::default()),
            Some(s) => Selector::try_from(s)
                .map_err(|e: ParseExpressionError| ValidationErrors::single(field, e.to_string())),
        };
        Ok(Self {
            name: window.name_any(),
            message: spec.message.clone().filter(|m| !m.trim().is_empty()),
            drain: spec.drain,
            allow_recreation: spec.allow_recreation,
            suspend: spec.suspend,
            notice,
            budget,
            drain_paused: spec.drain_paused,
            node_label_selector: spec.node_selector.clone(),
            node_selector: match &spec.node_selector {
                None => None,
                Some(_) => Some(selector("spec.nodeSelector", &spec.node_selector)?),
            },
            enforcement: spec.enforcement,
            gates,
            max_postpone,
            resume_after: spec.resume_after,
            schedule,
            exclusions,
            namespace_selector: selector("spec.namespaceSelector", &spec.namespace_selector)?,
            workspace_selector: selector("spec.workspaceSelector", &spec.workspace_selector)?,
        })
    }

    /// The occurrence in force at `t`, unless the window is suspended or an exclusion
    /// skips it. Whatever the enforcement: a `Warn` window is active, it only does not deny.
    pub fn active_at(&self, t: Timestamp) -> Option<Occurrence> {
        if self.suspend {
            return None;
        }
        self.exclusions.active_at(&self.schedule, t)
    }

    /// Whether the window denies, steers and drains (`Enforce`), or only reports what it
    /// would have done (`Warn`, `DryRun`).
    pub fn enforces(&self) -> bool {
        self.enforcement.is_enforce()
    }

    /// The next `n` occurrences after `t` that happen (exclusions skip the others).
    pub fn next_after(&self, t: Timestamp, n: usize) -> Vec<Occurrence> {
        self.exclusions.next_after(&self.schedule, t, n)
    }

    /// The occurrences after `t` until `n` that happen, each with the exclusion that
    /// skips it, if any: what `lifeguard maintenance next` lists.
    pub fn upcoming(&self, t: Timestamp, n: usize) -> Vec<Upcoming> {
        self.exclusions.upcoming(&self.schedule, t, n)
    }

    /// The skipped occurrences from now up to the next one that happens (status).
    pub fn skipped_until_next(&self, t: Timestamp, cap: usize) -> Vec<Upcoming> {
        self.exclusions.skipped_until_next(&self.schedule, t, cap)
    }

    /// The next instant at which `active_at` may change its answer: the end of the
    /// occurrence in force, or the start of the next one that happens, whichever is first
    /// (occurrences longer than the gap between starts hand over before they end).
    pub fn next_change(&self, t: Timestamp) -> Option<Timestamp> {
        let next_start = self.next_after(t, 1).first().map(|o| o.start);
        match self.exclusions.active_at(&self.schedule, t) {
            Some(o) => Some(next_start.map_or(o.end, |s| s.min(o.end))),
            None => next_start,
        }
    }

    /// The schedule as written, exclusions not applied: for the occurrence `maintenance
    /// skip` names. Everything else asks `active_at`, `next_after` or `upcoming`.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Whether the window is limited to some nodes (`spec.nodeSelector`): then it steers
    /// covered pods away from them instead of denying starts, and drains only them.
    pub fn node_scoped(&self) -> bool {
        self.node_selector.is_some()
    }

    /// Whether the window selects a node with these labels; every node without a
    /// `nodeSelector`.
    pub fn selects_node(&self, node_labels: &BTreeMap<String, String>) -> bool {
        self.node_selector
            .as_ref()
            .is_none_or(|s| s.matches(node_labels))
    }

    /// Whether the window narrows the namespaces it covers: only then do a namespace's
    /// labels matter to it.
    pub fn selects_namespaces(&self) -> bool {
        !self.namespace_selector.selects_all()
    }

    /// Whether the window's `namespaceSelector` matches these Namespace labels.
    pub fn covers_namespace(&self, namespace_labels: &BTreeMap<String, String>) -> bool {
        self.namespace_selector.matches(namespace_labels)
    }

    /// Whether the window's `workspaceSelector` matches these Workspace labels.
    pub fn covers_workspace(&self, workspace_labels: &BTreeMap<String, String>) -> bool {
        self.workspace_selector.matches(workspace_labels)
    }

    /// Whether the window applies to a workspace with these labels in a namespace with
    /// these labels. An empty selector covers everything.
    pub fn covers(
        &self,
        namespace_labels: &BTreeMap<String, String>,
        workspace_labels: &BTreeMap<String, String>,
    ) -> bool {
        self.namespace_selector.matches(namespace_labels)
            && self.workspace_selector.matches(workspace_labels)
    }
}
