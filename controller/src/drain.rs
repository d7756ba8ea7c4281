//! Draining: which workspaces a `drain: true` window stops, and how many remain. Pure.

use std::collections::BTreeMap;

use jiff::Timestamp;
use kube::ResourceExt;
use lifeguard_api::Workspace;
use lifeguard_api::drain::still_remaining;
use lifeguard_api::names::DRAINED_BY_ANNOTATION;
use lifeguard_api::window::CompiledWindow;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct DrainPlan {
    /// (namespace, name) of covered workspaces not yet asked to stop.
    pub to_stop: Vec<(String, String)>,
    /// Covered workspaces that have not reached Stopped or Failed
    /// (`lifeguard_api::drain::still_remaining`, the rule the CLI lists them by).
    pub remaining: u32,
}

impl DrainPlan {
    /// Folds one page of Workspaces into the plan, so a drain over 10,000 workspaces never
    /// holds them all at once.
    pub fn add(
        &mut self,
        window: &CompiledWindow,
        workspaces: &[Workspace],
        namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
    ) {
        for ws in workspaces {
            if !still_remaining(window, ws, namespace_labels) {
                continue;
            }
            self.remaining += 1;
            if !ws.annotations().contains_key(DRAINED_BY_ANNOTATION) {
                self.to_stop
                    .push((ws.namespace().unwrap_or_default(), ws.name_any()));
            }
        }
    }
}

/// Whether `window` drains at `now`; only then is there a plan to build.
pub fn draining(window: &CompiledWindow, now: Timestamp) -> bool {
    window.drain && window.active_at(now).is_some()
}

/// `None` when the window is not draining at `now`.
pub fn plan(
    window: &CompiledWindow,
    workspaces: &[Workspace],
    namespace_labels: &BTreeMap<String, BTreeMap<String, String>>,
    now: Timestamp,
) -> Option<DrainPlan> {
    if !draining(window, now) {
        return None;
    }
    let mut plan = DrainPlan::default();
    plan.add(window, workspaces, namespace_labels);
    Some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeguard_api::MaintenanceWindow;
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
        let plan = plan(&draining, &workspaces, &namespaces, now).expect("draining");
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
        assert_eq!(super::plan(&no_drain, &workspaces, &namespaces, now), None);
        let later: Timestamp = "2026-12-01T23:30:00Z".parse().expect("time");
        assert_eq!(
            super::plan(&draining, &workspaces, &namespaces, later),
            None,
            "not after the window"
        );
    }
}
