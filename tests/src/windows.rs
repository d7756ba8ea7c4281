//! MaintenanceWindows that cover only a test's own namespace.

use jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::maintenance::condition::DRAINED;
use serde_json::{Value, json};

use crate::{NAMESPACE_LABEL, unique_name, wait_window_enforced_for};

pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A one-off window over namespace `ns` only, opened a minute ago and ending in
/// `ends_in`, with `extra` merged into its spec. Returns once every webhook replica
/// enforces it for a Workspace labelled `labels` (each decides from its own cache).
pub async fn open_window(
    client: &Client,
    ns: &str,
    ends_in: SignedDuration,
    extra: Value,
    labels: Value,
) -> anyhow::Result<String> {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let name = unique_name("e2e-window");
    let now = Timestamp::now();
    let mut spec = json!({
        "start": rfc3339(now - SignedDuration::from_secs(60)),
        "end": rfc3339(now + ends_in),
        "message": "cluster upgrade in progress",
        "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}},
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let window: MaintenanceWindow =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))?;
    windows.create(&PostParams::default(), &window).await?;
    wait_window_enforced_for(client, ns, &name, labels).await?;
    Ok(name)
}

/// Deletes window `name`, if it is still there.
pub async fn close_window(client: &Client, name: &str) {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    let _ = windows.delete(name, &DeleteParams::default()).await;
}

/// Waits until window `name` reports `Drained` True; returns `since.elapsed()` then.
pub async fn wait_drained(
    client: &Client,
    name: &str,
    since: std::time::Instant,
    timeout: std::time::Duration,
) -> anyhow::Result<std::time::Duration> {
    let windows: Api<MaintenanceWindow> = Api::all(client.clone());
    crate::poll_until("window Drained", timeout, || async {
        let w = windows.get(name).await?;
        let done = w.status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == DRAINED && c.status == "True")
        });
        Ok(done.then(|| since.elapsed()))
    })
    .await
}

/// (reason, note) of the Events recorded about MaintenanceWindow `name`, in any namespace.
pub async fn window_event_messages(
    client: &Client,
    name: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    crate::cluster::events_about(client, None, "MaintenanceWindow", name).await
}
