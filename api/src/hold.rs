//! Drain gates, the pure part: checking `holdWhile` and `maxHold`, and the compiled form
//! the controller evaluates. What a gate answers and what the drain then does is the
//! controller's (`controller/src/window/hold_decision.rs`).

use jiff::SignedDuration;
use kube::core::Selector;

use crate::field_errors::{ValidationErrors, check_selector, parse_duration};
use crate::maintenance::MaintenanceWindowSpec;

/// A window's gates, ready to evaluate.
#[derive(Debug, Clone, Default)]
pub struct Gates {
    /// PromQL: holds while it returns any series.
    pub query: Option<String>,
    /// Holds while a matching pod is Running in a covered namespace.
    pub pods: Option<Selector>,
    /// The longest one hold lasts; `None`: until the occurrence ends.
    pub max_hold: Option<SignedDuration>,
}

/// Longest accepted PromQL query: a gate names a condition, not a report.
pub const MAX_QUERY_LEN: usize = 4096;

/// The gates of `spec`, `None` without `holdWhile`, or every problem with them.
pub fn compile(spec: &MaintenanceWindowSpec) -> Result<Option<Gates>, ValidationErrors> {
    let mut errors = ValidationErrors::default();
    let max_hold = spec
        .max_hold
        .as_deref()
        .and_then(|text| parse_duration("spec.maxHold", text, &mut errors));
    let Some(hold) = &spec.hold_while else {
        if spec.max_hold.is_some() {
            errors.push(
                "spec.maxHold",
                "bounds how long a gate holds the drain; it needs spec.holdWhile",
            );
        }
        return errors.into_result(None);
    };
    if !spec.drain {
        errors.push(
            "spec.holdWhile",
            "holds a drain while it is unsafe; it needs drain: true",
        );
    }
    if hold.prometheus.is_none() && hold.pods.is_none() {
        errors.push(
            "spec.holdWhile",
            "names no gate; give prometheus.query, pods.selector or both",
        );
    }
    let query = hold.prometheus.as_ref().map(|p| p.query.trim().to_string());
    match query.as_deref() {
        Some("") => errors.push(
            "spec.holdWhile.prometheus.query",
            "must not be empty; give a PromQL query such as ALERTS{alertstate=\"firing\"}",
        ),
        Some(q) if q.len() > MAX_QUERY_LEN => errors.push(
            "spec.holdWhile.prometheus.query",
            format!("is {} characters long; at most {MAX_QUERY_LEN}", q.len()),
        ),
        _ => {}
    }
    let mut pods = None;
    if let Some(gate) = &hold.pods {
        let field = "spec.holdWhile.pods.selector";
        let before = errors.0.len();
        check_selector(field, Some(&gate.selector), &mut errors);
        let empty = gate
            .selector
            .match_labels
            .as_ref()
            .is_none_or(|m| m.is_empty())
            && gate
                .selector
                .match_expressions
                .as_ref()
                .is_none_or(|e| e.is_empty());
        if empty {
            errors.push(
                field,
                "is empty and would match every pod; name the pods that make a drain unsafe, such as matchLabels: {app: backup}",
            );
        } else if errors.0.len() == before {
            match Selector::try_from(gate.selector.clone()) {
                Ok(selector) => pods = Some(selector),
                Err(e) => errors.push(field, e.to_string()),
            }
        }
    }
    errors.into_result(Some(Gates {
        query,
        pods,
        max_hold,
    }))
}

#[cfg(test)]
#[path = "hold_tests.rs"]
pub(crate) mod hold_tests;
