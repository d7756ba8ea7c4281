//! Notifications outside the cluster, against the real cluster: the controller (pointed by
//! the local overlay at a receiver this test binds on the host) posts a JSON document when a
//! workspace is told of a coming drain, when the window's occurrence starts, when the drain
//! stops the workspace, and when the occurrence ends; a document the receiver answers with
//! a 500 comes again with the same id. Other tests' windows send documents too: only this
//! test's window's are looked at.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, PostParams};
use lifeguard_api::maintenance::MaintenanceWindow;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    NAMESPACE_LABEL, NOTIFY_PATH, NOTIFY_RECEIVER, Received, Receiver, controller_leader,
    poll_until, rfc3339, unique_name, wait_phase, with_namespace,
};
use serde_json::{Value, json};

const KINDS: [&str; 4] = ["notice", "windowStart", "drainStop", "windowEnd"];

fn window_of(body: &Value) -> Option<&str> {
    body["window"]["name"].as_str()
}

/// This window's requests, in arrival order.
fn ours<'a>(received: &'a [Received], window: &str) -> Vec<&'a Received> {
    received
        .iter()
        .filter(|r| window_of(&r.body) == Some(window))
        .collect()
}

#[tokio::test]
async fn a_drain_window_is_announced_started_drained_and_ended_outside_the_cluster() {
    with_namespace("notify", |client, ns| async move {
        let window = unique_name("e2e-notify");
        // The first document of this window is answered 500, every other one 200.
        let name = window.clone();
        let receiver = Receiver::bind(NOTIFY_RECEIVER, move |body, before| {
            let first = window_of(body) == Some(name.as_str())
                && !before
                    .iter()
                    .any(|r| window_of(&r.body) == Some(name.as_str()));
            if first { 500 } else { 200 }
        })
        .await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        workspaces
            .create(
                &PostParams::default(),
                &lifeguard_e2e::workspace("nia").build()?,
            )
            .await?;
        let running = wait_phase(
            &workspaces,
            "nia",
            WorkspacePhase::Running,
            Duration::from_secs(60),
        )
        .await?;
        let node = running.status.as_ref().and_then(|s| s.node_name.clone());

        // Opens in 15 s for 15 s, with an hour's notice: the workspace is told at once.
        let windows: Api<MaintenanceWindow> = Api::all(client.clone());
        let created = Timestamp::now();
        let start = Timestamp::from_second(created.as_second() + 15)?;
        let end = start + SignedDuration::from_secs(15);
        let mw: MaintenanceWindow = serde_json::from_value(json!({
            "metadata": {"name": window},
            "spec": {"start": rfc3339(start), "end": rfc3339(end), "drain": true, "notice": "1h",
                     "message": "e2e notifications",
                     "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: ns}}},
        }))?;
        windows.create(&PostParams::default(), &mw).await?;
        let outcome = check(
            &client,
            &receiver,
            &window,
            &ns,
            node,
            (start, end),
            created,
        )
        .await;
        let _ = windows.delete(&window, &DeleteParams::default()).await;
        outcome
    })
    .await;
}

async fn check(
    client: &kube::Client,
    receiver: &Receiver,
    window: &str,
    ns: &str,
    node: Option<String>,
    (start, end): (Timestamp, Timestamp),
    created: Timestamp,
) -> anyhow::Result<()> {
    // Each kind delivered (answered 200) at least once.
    let delivered = poll_until(
        "notice, windowStart, drainStop and windowEnd delivered",
        Duration::from_secs(45),
        || {
            let received = receiver.received();
            async move {
                let ours = ours(&received, window);
                let mut first_delivery: BTreeMap<&str, Received> = BTreeMap::new();
                for r in ours.iter().filter(|r| r.status == 200) {
                    let kind = r.body["kind"].as_str().unwrap_or_default();
                    if let Some(k) = KINDS.iter().find(|k| **k == kind) {
                        first_delivery.entry(*k).or_insert_with(|| (*r).clone());
                    }
                }
                if first_delivery.len() == KINDS.len() {
                    return Ok(Some((
                        ours.into_iter().cloned().collect::<Vec<_>>(),
                        first_delivery,
                    )));
                }
                let seen: Vec<String> = ours
                    .iter()
                    .map(|r| format!("{} {}", r.status, r.body["id"]))
                    .collect();
                anyhow::bail!("this window's requests so far: {seen:?}")
            }
        },
    )
    .await?;
    let (all, first) = delivered;

    // The retry: the first request was answered 500, and the same document came again.
    let refused = all.first().ok_or_else(|| anyhow::anyhow!("no request"))?;
    assert_eq!(refused.status, 500);
    let again = all
        .iter()
        .skip(1)
        .find(|r| r.body["id"] == refused.body["id"])
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the document answered 500 ({}) never came again",
                refused.body["id"]
            )
        })?;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, refused.body, "the retry is the same document");
    let retry_after = again.at.duration_since(refused.at);
    assert!(
        retry_after >= SignedDuration::from_millis(400),
        "retried after {retry_after:#}: backoff waits"
    );

    // Order: told, started, stopped, ended.
    let order: Vec<Timestamp> = KINDS.iter().map(|k| first[k].at).collect();
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "delivered out of order: {:?}",
        KINDS.iter().zip(&order).collect::<Vec<_>>()
    );

    // The documents: versioned, this window's occurrence and message, the workspace.
    let leader = controller_leader(client).await?;
    for kind in KINDS {
        let r = &first[kind];
        let doc = &r.body;
        assert_eq!(r.path, NOTIFY_PATH, "{kind}");
        assert_eq!(
            r.content_type.as_deref(),
            Some("application/json"),
            "{kind}"
        );
        assert_eq!(doc["version"], "lifeguard.dev/notification/v1", "{kind}");
        assert_eq!(doc["cluster"], "local", "{kind}");
        assert_eq!(
            doc["window"],
            json!({"name": window, "start": rfc3339(start), "end": rfc3339(end)}),
            "{kind}"
        );
        assert_eq!(doc["message"], "e2e notifications", "{kind}");
        let id = doc["id"].as_str().unwrap_or_default();
        assert!(
            id.starts_with(&format!("{kind}/{window}/{}", rfc3339(start))),
            "{kind}: id {id}"
        );
        assert!(
            doc["summary"].as_str().is_some_and(|s| s.contains(window)),
            "{kind}: {doc}"
        );
        match kind {
            "notice" | "drainStop" => {
                assert_eq!(doc["workspace"]["namespace"], ns, "{kind}");
                assert_eq!(doc["workspace"]["name"], "nia", "{kind}");
                assert_eq!(doc["workspace"]["node"].as_str(), node.as_deref(), "{kind}");
            }
            _ => assert!(doc.get("workspace").is_none(), "{kind}: {doc}"),
        }
    }
    // Only the leader sends: every request of this window came from one address.
    let senders: std::collections::BTreeSet<_> = all.iter().map(|r| r.peer.ip()).collect();
    assert_eq!(senders.len(), 1, "senders {senders:?} (leader {leader:?})");

    // Figures: how soon after each transition its document was delivered.
    let lag = |kind: &str, since: Timestamp| first[kind].at.duration_since(since);
    eprintln!(
        "notice {:#} after the window's creation; windowStart {:#}, drainStop {:#} after its start; windowEnd {:#} after its end; retry {:#} after the 500",
        lag("notice", created),
        lag("windowStart", start),
        lag("drainStop", start),
        lag("windowEnd", end),
        retry_after
    );
    Ok(())
}
