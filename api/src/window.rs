//! A MaintenanceWindow made ready for fast decisions: schedule parsed and selectors compiled
//! once per change of the object, so admission and drain checks do no parsing.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::core::{ParseExpressionError, Selector, SelectorExt};

use crate::MaintenanceWindow;
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
    schedule: Schedule,
    namespace_selector: Selector,
    workspace_selector: Selector,
}

impl CompiledWindow {
    /// Fails with the same messages the webhook gives for an invalid window.
    pub fn compile(window: &MaintenanceWindow) -> Result<Self, ValidationErrors> {
        let spec = &window.spec;
        let schedule = spec.schedule()?;
        let notice = spec.notice_period()?;
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

    /// Whether the window narrows the namespaces it covers: only then do a namespace's
    /// labels matter to it.
    pub fn selects_namespaces(&self) -> bool {
        !self.namespace_selector.selects_all()
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
