//! A MaintenanceWindow made ready for fast decisions: schedule parsed and selectors compiled
//! once per change of the object, so admission and drain checks do no parsing.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::core::{ParseExpressionError, Selector, SelectorExt};

use crate::MaintenanceWindow;
use crate::node_scope::{self, Budget};
use crate::schedule::{Occurrence, Schedule};
use crate::validation::ValidationErrors;

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
    schedule: Schedule,
    node_selector: Option<Selector>,
    namespace_selector: Selector,
    workspace_selector: Selector,
}

impl CompiledWindow {
    /// Fails with the same messages the webhook gives for an invalid window.
    pub fn compile(window: &MaintenanceWindow) -> Result<Self, ValidationErrors> {
        let spec = &window.spec;
        let schedule = spec.schedule()?;
        let notice = spec.notice_period()?;
        let scope_errors = node_scope::check(spec);
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
            schedule,
            namespace_selector: selector("spec.namespaceSelector", &spec.namespace_selector)?,
            workspace_selector: selector("spec.workspaceSelector", &spec.workspace_selector)?,
        })
    }

    /// The occurrence in force at `t`, unless the window is suspended.
    pub fn active_at(&self, t: Timestamp) -> Option<Occurrence> {
        if self.suspend {
            return None;
        }
        self.schedule.active_at(t)
    }

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
