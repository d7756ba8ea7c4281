//! Node-scoped windows and drain budgets, the pure part: checking `nodeSelector`,
//! `maxConcurrentDrains` and `drainPaused`; how many new stops a drain may start given the
//! ones in flight; and the node affinity that keeps a covered pod off the selected nodes.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::field_errors::{FieldError, ValidationErrors};
use crate::maintenance::MaintenanceWindowSpec;

/// How many covered workspaces a drain may be stopping at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Unlimited,
    Count(u32),
    /// 1..=100 percent of the workspaces the window drains.
    Percent(u32),
}

impl Budget {
    /// The most stops in flight at once when the window drains `total` workspaces; `None`
    /// is no limit. A percentage rounds up and is at least one, so a small drain still moves.
    pub fn limit(self, total: u32) -> Option<u32> {
        match self {
            Budget::Unlimited => None,
            Budget::Count(n) => Some(n),
            Budget::Percent(p) => {
                Some((u64::from(total) * u64::from(p)).div_ceil(100).max(1) as u32)
            }
        }
    }

    /// How many new stops may start now: what the budget leaves beside `in_flight`, none
    /// while the drain is paused.
    pub fn may_start(self, total: u32, in_flight: u32, paused: bool) -> Option<u32> {
        if paused {
            return Some(0);
        }
        self.limit(total)
            .map(|limit| limit.saturating_sub(in_flight))
    }
}

const BUDGET_FIELD: &str = "spec.maxConcurrentDrains";

/// Parses `maxConcurrentDrains`; the message says what a valid value looks like.
pub fn parse_budget(value: Option<&IntOrString>) -> Result<Budget, String> {
    match value {
        None => Ok(Budget::Unlimited),
        Some(IntOrString::Int(n)) if *n >= 1 => Ok(Budget::Count(*n as u32)),
        Some(IntOrString::Int(n)) => Err(format!(
            "{n} must be at least 1 (omit maxConcurrentDrains for no limit)"
        )),
        Some(IntOrString::String(text)) => {
            let percent = text
                .trim()
                .strip_suffix('%')
                .and_then(|p| p.trim().parse::<u64>().ok());
            match percent {
                Some(p @ 1..=100) => Ok(Budget::Percent(p as u32)),
                Some(_) => Err(format!("{text:?} must be a percentage between 1% and 100%")),
                None => Err(format!(
                    "{text:?} is neither a number such as 2 nor a percentage such as 25%"
                )),
            }
        }
    }
}

/// Every problem with the node-scope and budget fields of a window's spec.
pub fn validate(spec: &MaintenanceWindowSpec) -> ValidationErrors {
    let mut errors = Vec::new();
    let mut push = |field: &str, message: String| {
        errors.push(FieldError {
            field: field.to_string(),
            message,
        })
    };
    if let Some(selector) = &spec.node_selector {
        if selects_everything(selector) {
            push(
                "spec.nodeSelector",
                "is empty and would select every node; omit nodeSelector for a cluster-wide window, or name the nodes, for example matchLabels: {pool: a}".into(),
            );
        }
        let mut selector_errors = ValidationErrors::default();
        crate::field_errors::check_selector(
            "spec.nodeSelector",
            Some(selector),
            &mut selector_errors,
        );
        for e in selector_errors.0 {
            push(&e.field, e.message);
        }
    }
    if let Err(message) = parse_budget(spec.max_concurrent_drains.as_ref()) {
        push(BUDGET_FIELD, message);
    } else if spec.max_concurrent_drains.is_some() && !spec.drain {
        push(
            BUDGET_FIELD,
            "limits how many workspaces a drain stops at once; it needs drain: true".into(),
        );
    }
    if spec.drain_paused && !spec.drain {
        push(
            "spec.drainPaused",
            "pauses a drain; it needs drain: true".into(),
        );
    }
    ValidationErrors(errors)
}

fn selects_everything(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(|l| l.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty())
}

/// The requirements, one of which a node must meet not to be selected by `selector`:
/// NOT (r1 AND r2 ...) is (NOT r1) OR (NOT r2) .... `NotIn`/`DoesNotExist` match a node
/// without the key, exactly as the LabelSelector's negation does, so no Node lookup is
/// needed.
fn negated_requirements(selector: &LabelSelector) -> Vec<NodeSelectorRequirement> {
    let requirement =
        |key: &str, operator: &str, values: Option<Vec<String>>| NodeSelectorRequirement {
            key: key.to_string(),
            operator: operator.to_string(),
            values,
        };
    let mut negated = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        negated.push(requirement(key, "NotIn", Some(vec![value.clone()])));
    }
    for e in selector.match_expressions.iter().flatten() {
        let (operator, values) = match e.operator.as_str() {
            "In" => ("NotIn", e.values.clone()),
            "NotIn" => ("In", e.values.clone()),
            "Exists" => ("DoesNotExist", None),
            "DoesNotExist" => ("Exists", None),
            // Validation refuses other operators; nothing to negate.
            _ => continue,
        };
        negated.push(requirement(&e.key, operator, values));
    }
    negated
}

/// The required node affinity terms that keep a pod off every node `selector` matches:
/// one term per negated requirement (`negated_requirements`), each term AND-ed with every
/// term the pod already requires (`existing`), because a pod's required terms are OR-ed.
pub fn avoid_terms(
    selector: &LabelSelector,
    existing: &[NodeSelectorTerm],
) -> Vec<NodeSelectorTerm> {
    let negated = negated_requirements(selector);
    let base = if existing.is_empty() {
        vec![NodeSelectorTerm::default()]
    } else {
        existing.to_vec()
    };
    let mut terms = Vec::new();
    for term in &base {
        for n in &negated {
            let mut t = term.clone();
            t.match_expressions
                .get_or_insert_with(Vec::new)
                .push(n.clone());
            terms.push(t);
        }
    }
    terms
}

/// Whether a pod requiring `terms` (its required node affinity) can never be scheduled onto
/// a node `selector` matches: each term, OR-ed with the others, carries one of the
/// requirements `avoid_terms` adds. Syntactic, so a pod kept off those nodes some other way
/// reads as not kept off them, which only costs it a re-creation; none is kept off by no
/// terms at all.
pub fn avoids(selector: &LabelSelector, terms: &[NodeSelectorTerm]) -> bool {
    let negated = negated_requirements(selector);
    !negated.is_empty()
        && !terms.is_empty()
        && terms.iter().all(|term| {
            term.match_expressions
                .iter()
                .flatten()
                .any(|r| negated.contains(r))
        })
}

#[cfg(test)]
#[path = "node_scope_tests.rs"]
mod node_scope_tests;
