//! Windows built from flags and read from manifest files. Pure.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use lifeguard_api::validation::validate_maintenance_window;
use lifeguard_api::{MaintenanceWindow, MaintenanceWindowSpec};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::when::rfc3339;

/// `k=v,k2=v2` (kubectl's equality form) as `matchLabels`.
pub fn parse_selector(flag: &str, text: &str) -> Result<LabelSelector> {
    let mut labels = BTreeMap::new();
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = term
            .split_once("==")
            .or_else(|| term.split_once('='))
            .filter(|(k, v)| !k.trim().is_empty() && !k.ends_with('!') && !v.contains('='))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{flag}: {term:?} is not key=value (only equality terms are supported, e.g. team=ml,env=dev)"
                ))
            })?;
        labels.insert(key.trim().to_string(), value.trim().to_string());
    }
    if labels.is_empty() {
        return Err(Error::Usage(format!(
            "{flag}: {text:?} has no key=value term"
        )));
    }
    Ok(LabelSelector {
        match_labels: Some(labels),
        match_expressions: None,
    })
}

/// What `maintenance start` asks for.
#[derive(Debug, Clone, Default)]
pub struct OneOff {
    pub name: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub message: Option<String>,
    pub drain: bool,
    /// With `drain`: how long before `start` covered workspaces are told.
    pub notice: Option<jiff::SignedDuration>,
    pub allow_recreation: bool,
    pub namespace_selector: Option<LabelSelector>,
    pub workspace_selector: Option<LabelSelector>,
    pub node_selector: Option<LabelSelector>,
    /// With `drain`: `maxConcurrentDrains`.
    pub max_concurrent_drains: Option<IntOrString>,
}

/// The window, checked with the same validation the webhook applies.
pub fn one_off_window(w: OneOff) -> Result<MaintenanceWindow> {
    if w.end <= w.start {
        return Err(Error::Usage(format!(
            "the window would end at {}, which is not after its start {}",
            rfc3339(w.end),
            rfc3339(w.start)
        )));
    }
    let spec = MaintenanceWindowSpec {
        start: Some(rfc3339(w.start)),
        end: Some(rfc3339(w.end)),
        message: w.message.filter(|m| !m.trim().is_empty()),
        drain: w.drain,
        notice: w.notice.map(|d| format!("{d:#}")),
        allow_recreation: w.allow_recreation,
        namespace_selector: w.namespace_selector,
        workspace_selector: w.workspace_selector,
        node_selector: w.node_selector,
        max_concurrent_drains: w.max_concurrent_drains,
        ..MaintenanceWindowSpec::default()
    };
    validate_maintenance_window(&spec)?;
    Ok(MaintenanceWindow::new(&w.name, spec))
}

/// Every MaintenanceWindow in a YAML or JSON text (several YAML documents allowed; other
/// kinds are skipped, so a whole install manifest can be given).
pub fn windows_in(text: &str, source: &str) -> Result<Vec<MaintenanceWindow>> {
    let mut windows = Vec::new();
    for (i, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = serde_json::Value::deserialize(document)
            .map_err(|e| Error::Failed(format!("{source}: document {}: {e}", i + 1)))?;
        if value.is_null()
            || value.get("kind").and_then(|k| k.as_str()) != Some("MaintenanceWindow")
        {
            continue;
        }
        let window: MaintenanceWindow = serde_json::from_value(value).map_err(|e| {
            Error::Failed(format!(
                "{source}: document {}: not a MaintenanceWindow: {e}",
                i + 1
            ))
        })?;
        windows.push(window);
    }
    if windows.is_empty() {
        return Err(Error::Failed(format!(
            "{source}: no MaintenanceWindow (kind: MaintenanceWindow) found"
        )));
    }
    Ok(windows)
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
