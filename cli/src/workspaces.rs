//! What `workspaces list` shows. Pure.

use jiff::Timestamp;
use kube::ResourceExt;
use lifeguard_api::{Workspace, WorkspacePhase};
use serde::Serialize;

use crate::output::{Tabular, or_dash};
use crate::when::{human, rfc3339};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    pub reason: String,
    pub message: String,
    pub node: String,
    pub time: String,
    #[serde(skip)]
    age: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRow {
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub pod_recreated: u32,
    /// While the pod is not Ready yet: what holds it (the `Starting` condition's reason and
    /// message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starting: Option<Starting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_rejection: Option<Rejection>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Starting {
    pub reason: String,
    pub message: String,
}

/// The `Starting` condition while it is True (the start is going on).
fn starting(status: &lifeguard_api::WorkspaceStatus) -> Option<Starting> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == lifeguard_api::workspace::condition::STARTING && c.status == "True")
        .map(|c| Starting {
            reason: c.reason.clone(),
            message: c.message.clone(),
        })
}

pub fn rows(workspaces: &[Workspace], now: Timestamp) -> Vec<WorkspaceRow> {
    let mut rows: Vec<WorkspaceRow> = workspaces
        .iter()
        .map(|ws| {
            let status = ws.status.clone().unwrap_or_default();
            let starting = starting(&status);
            WorkspaceRow {
                namespace: ws.namespace().unwrap_or_default(),
                name: ws.name_any(),
                phase: status.phase.map(WorkspacePhase::as_str),
                node: status.node_name,
                pod_recreated: status.pod_recreated,
                starting,
                last_rejection: status.last_rejection.map(|r| Rejection {
                    age: human(now.duration_since(r.time.0)),
                    time: rfc3339(r.time.0),
                    reason: r.reason,
                    message: r.message,
                    node: r.node,
                }),
            }
        })
        .collect();
    rows.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    rows
}

impl Tabular for WorkspaceRow {
    fn headers() -> &'static [&'static str] {
        &[
            "NAMESPACE",
            "NAME",
            "PHASE",
            "NODE",
            "RECREATIONS",
            "STARTING",
            "LAST REJECTION",
        ]
    }

    fn cells(&self) -> Vec<String> {
        vec![
            self.namespace.clone(),
            self.name.clone(),
            or_dash(self.phase),
            or_dash(self.node.as_ref()),
            self.pod_recreated.to_string(),
            or_dash(self.starting.as_ref().map(|s| s.reason.as_str())),
            or_dash(
                self.last_rejection
                    .as_ref()
                    .map(|r| format!("{} ({} ago)", r.reason, r.age)),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn ws(ns: &str, name: &str, status: Value) -> Workspace {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"podTemplate": {}}, "status": status
        }))
        .expect("workspace")
    }

    #[test]
    fn workspace_rows() {
        let now: Timestamp = "2026-12-01T12:00:00Z".parse().expect("now");
        let list = [
            ws("team-b", "zed", Value::Null),
            ws(
                "team-a",
                "bob",
                json!({"phase": "Running", "nodeName": "n1", "podRecreated": 2,
                       "lastRejection": {"reason": "OutOfcpu", "message": "no cpu", "node": "n1",
                                         "time": "2026-12-01T11:55:00Z"}}),
            ),
            ws("team-a", "amy", json!({"phase": "Stopped"})),
            ws(
                "team-a",
                "cid",
                json!({"phase": "Creating", "conditions": [{"type": "Starting", "status": "True",
                       "reason": "ContainerConfig", "message": "container ide: secret \"t\" not found",
                       "lastTransitionTime": "2026-12-01T11:59:00Z"}]}),
            ),
            ws(
                "team-a",
                "dot",
                json!({"phase": "Running", "conditions": [{"type": "Starting", "status": "False",
                       "reason": "Started", "message": "ready", "lastTransitionTime": "2026-12-01T11:59:00Z"}]}),
            ),
        ];
        let cells: Vec<Vec<String>> = rows(&list, now).iter().map(Tabular::cells).collect();
        let want = [
            ["team-a", "amy", "Stopped", "-", "0", "-", "-"],
            [
                "team-a",
                "bob",
                "Running",
                "n1",
                "2",
                "-",
                "OutOfcpu (5m ago)",
            ],
            [
                "team-a",
                "cid",
                "Creating",
                "-",
                "0",
                "ContainerConfig",
                "-",
            ],
            ["team-a", "dot", "Running", "-", "0", "-", "-"],
            ["team-b", "zed", "-", "-", "0", "-", "-"],
        ];
        assert_eq!(cells, want.map(|r| r.map(String::from).to_vec()).to_vec());
        let json = serde_json::to_value(&rows(&list, now)[1]).expect("json");
        assert_eq!(json["lastRejection"]["time"], "2026-12-01T11:55:00Z");
        assert_eq!(json["podRecreated"], 2);
        let json = serde_json::to_value(&rows(&list, now)[2]).expect("json");
        assert_eq!(
            json["starting"]["message"],
            "container ide: secret \"t\" not found"
        );
    }
}
