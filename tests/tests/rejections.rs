//! Kubelet rejections with the real kubelet, one per kind it produces on these machines:
//! NodePorts (a host port already taken), OutOfpods and OutOf<extended resource> are
//! transient and re-created once the node can take the pod; SysctlForbidden is permanent
//! and fails the Workspace at once; and a replacement prefers another node than the one
//! that refused.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lifeguard_api::rejection::RejectionClass;
use lifeguard_api::workspace::condition::FAILED;
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    BUSYBOX_IMAGE, SECOND_NODE, StoppedNode, allow_pods, forbid_pods, node_name, poll_until,
    unique_name, wait_for, wait_phase, wait_settled, with_namespace,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);

/// A sleeping workspace whose pod spec also has `spec` (merged over the defaults) and whose
/// one container also has `container`.
fn workspace(name: &str, spec: Value, container: Value) -> anyhow::Result<Workspace> {
    lifeguard_e2e::workspace(name)
        .small_requests()
        .ide(container)
        .pod_spec(spec)
        .build()
}

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

/// Waits until the kubelet's rejection with `reason` is recorded on Workspace `name`.
async fn rejected(api: &Api<Workspace>, name: &str, reason: &str) -> anyhow::Result<Workspace> {
    wait_for(
        api,
        name,
        TIMEOUT,
        &format!("rejected with {reason}"),
        |w| {
            w.status
                .as_ref()
                .and_then(|s| s.last_rejection.as_ref())
                .is_some_and(|r| r.reason == reason)
        },
    )
    .await
}

fn rejection_class(ws: &Workspace) -> Option<RejectionClass> {
    ws.status.as_ref()?.last_rejection.as_ref()?.class
}

#[tokio::test]
async fn a_taken_host_port_is_transient_and_the_workspace_starts_once_it_is_free() {
    with_namespace("nodeports", |client, ns| async move {
        let node = node_name(&client).await?;
        let port = 30000 + (std::process::id() % 2000) as i32;
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let squatter: Pod = serde_json::from_value(json!({
            "metadata": {"name": "squatter"},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                     "command": ["sleep", "3600"],
                                     "ports": [{"containerPort": 8080, "hostPort": port}]}]}
        }))?;
        pods.create(&PostParams::default(), &squatter).await?;
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let ws = workspace(
            "petra",
            json!({"nodeName": node}),
            json!({"ports": [{"containerPort": 8080, "hostPort": port}]}),
        )?;
        workspaces.create(&PostParams::default(), &ws).await?;
        let refused = rejected(&workspaces, "petra", "NodePorts").await?;
        assert_eq!(rejection_class(&refused), Some(RejectionClass::Transient));
        assert_ne!(phase(&refused), Some(WorkspacePhase::Failed));

        pods.delete("squatter", &DeleteParams::default().grace_period(0))
            .await?;
        let running = wait_for(&workspaces, "petra", TIMEOUT, "Running once the port is free", |w| {
            phase(w) == Some(WorkspacePhase::Running)
        })
        .await?;
        let status = running.status.unwrap_or_default();
        assert!(status.pod_recreated >= 1, "re-created: {}", status.pod_recreated);
        Ok(())
    })
    .await;
}

/// Advertises `count` of extended resource `resource` on `node` (the documented way to
/// advertise a node-level resource: a node status patch); `None` removes it.
async fn advertise(
    client: &Client,
    node: &str,
    resource: &str,
    count: Option<u32>,
) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let value = count.map_or(Value::Null, |c| json!(c.to_string()));
    let patch =
        json!({"status": {"capacity": {resource: value}, "allocatable": {resource: value}}});
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_short_extended_resource_is_transient_and_the_workspace_starts_once_it_is_there() {
    with_namespace("outof", |client, ns| async move {
        let node = node_name(&client).await?;
        let resource = format!("e2e.lifeguard.dev/{}", unique_name("dongle"));
        // Advertised but none free: the kubelet refuses (a resource it does not know at all
        // it leaves to scheduler extenders and ignores).
        advertise(&client, &node, &resource, Some(0)).await?;
        let outcome = async {
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
            let ws = workspace(
                "quentin",
                json!({"nodeName": node}),
                json!({"resources": {"requests": {"cpu": "1m", "memory": "4Mi"},
                                     "limits": {resource.clone(): "1"}}}),
            )?;
            workspaces.create(&PostParams::default(), &ws).await?;
            let refused = rejected(&workspaces, "quentin", &format!("OutOf{resource}")).await?;
            anyhow::ensure!(
                rejection_class(&refused) == Some(RejectionClass::Transient),
                "OutOf<resource> is transient: {:?}",
                rejection_class(&refused)
            );
            advertise(&client, &node, &resource, Some(1)).await?;
            let running =
                wait_phase(&workspaces, "quentin", WorkspacePhase::Running, TIMEOUT).await?;
            let recreated = running.status.unwrap_or_default().pod_recreated;
            anyhow::ensure!(recreated >= 1, "re-created: {recreated}");
            Ok(())
        }
        .await;
        advertise(&client, &node, &resource, None).await?;
        outcome
    })
    .await;
}

#[tokio::test]
async fn a_forbidden_sysctl_is_permanent_and_fails_the_workspace_without_retries() {
    with_namespace("sysctl", |client, ns| async move {
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        // Not in the kubelet's safe set, and no node here allows unsafe sysctls.
        let ws = workspace(
            "rosa",
            json!({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "65536"}]}}),
            json!({}),
        )?;
        workspaces.create(&PostParams::default(), &ws).await?;
        let failed = wait_for(&workspaces, "rosa", TIMEOUT, "Failed", |w| {
            phase(w) == Some(WorkspacePhase::Failed)
        })
        .await?;
        assert_eq!(rejection_class(&failed), Some(RejectionClass::Permanent));
        let status = failed.status.unwrap_or_default();
        assert_eq!(
            status.pod_recreated, 0,
            "no retry spent on a rejection no retry can fix"
        );
        let condition = status
            .conditions
            .iter()
            .find(|c| c.type_ == FAILED && c.status == "True")
            .ok_or_else(|| anyhow::anyhow!("no Failed condition: {:?}", status.conditions))?;
        assert_eq!(condition.reason, "SysctlForbidden");
        assert!(
            condition.message.contains("kernel.msgmax"),
            "the kubelet's own words: {}",
            condition.message
        );
        Ok(())
    })
    .await;
}

async fn set_label(nodes: &Api<Node>, node: &str, label: &str, on: bool) -> anyhow::Result<()> {
    let value = if on { json!("true") } else { Value::Null };
    let patch = json!({"metadata": {"labels": {label: value}}});
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn cordon(nodes: &Api<Node>, node: &str, on: bool) -> anyhow::Result<()> {
    let patch = json!({"spec": {"unschedulable": on}});
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Ready, schedulable and without a NoSchedule or NoExecute taint: the scheduler may pick it.
fn schedulable(node: &Node) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let spec = node.spec.clone().unwrap_or_default();
    ready
        && spec.unschedulable != Some(true)
        && spec
            .taints
            .unwrap_or_default()
            .iter()
            .all(|t| t.effect == "PreferNoSchedule")
}

#[tokio::test]
#[ignore = "disruptive: restarts a node's kubelet; test-all runs it alone with --ignored"]
async fn a_replacement_prefers_another_node_than_the_one_that_refused() {
    with_namespace("avoid", |client, ns| async move {
        wait_settled(&client).await?;
        let nodes: Api<Node> = Api::all(client.clone());
        let refusing = SECOND_NODE.to_string();
        let other = nodes
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .find(|n| *n != refusing)
            .ok_or_else(|| anyhow::anyhow!("needs two nodes"))?;
        // Both nodes carry the label the workspace requires, so either may take it.
        let label = format!("e2e.lifeguard.dev/{}", unique_name("lab"));
        for node in [&refusing, &other] {
            set_label(&nodes, node, &label, true).await?;
        }
        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let outcome = async {
            // The refusal: the scheduler places the pod on a node whose kubelet is down
            // (still Ready for 40 s; its containers, a webhook replica among them, keep
            // serving) and the only schedulable one; the label goes before the
            // kubelet comes back, and a restarted kubelet admits pods against the node it
            // reads then, so it refuses with NodeAffinity.
            let stopped = StoppedNode::stop_kubelet(&refusing)?;
            cordon(&nodes, &other, true).await?;
            let ws = workspace(
                "sven",
                json!({"nodeSelector": {label.clone(): "true"}}),
                json!({}),
            )?;
            workspaces.create(&PostParams::default(), &ws).await?;
            wait_for(
                &pods,
                "ws-sven",
                TIMEOUT,
                "bound to the stopped node",
                |p: &Pod| {
                    p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(refusing.as_str())
                },
            )
            .await?;
            // The quota holds the replacement back until both nodes could take it again.
            forbid_pods(&client, &ns).await?;
            set_label(&nodes, &refusing, &label, false).await?;
            cordon(&nodes, &other, false).await?;
            stopped.start()?;
            let refused = rejected(&workspaces, "sven", "NodeAffinity").await?;
            let on = refused
                .status
                .as_ref()
                .and_then(|s| s.last_rejection.as_ref())
                .map(|r| r.node.clone());
            anyhow::ensure!(
                on.as_deref() == Some(refusing.as_str()),
                "refused on {on:?}"
            );

            set_label(&nodes, &refusing, &label, true).await?;
            poll_until(
                "both nodes schedulable again",
                Duration::from_secs(120),
                || async {
                    let all = nodes.list(&Default::default()).await?.items;
                    Ok(all
                        .iter()
                        .filter(|n| schedulable(n))
                        .count()
                        .ge(&2)
                        .then_some(()))
                },
            )
            .await?;
            allow_pods(&client, &ns).await?;
            let running = wait_for(&workspaces, "sven", TIMEOUT, "Running again", |w| {
                phase(w) == Some(WorkspacePhase::Running)
            })
            .await?;
            let replacement = pods.get("ws-sven").await?;
            let spec = replacement.spec.clone().unwrap_or_default();
            anyhow::ensure!(
                spec.node_name.as_deref() == Some(other.as_str()),
                "the replacement landed on {:?}, not on {other}",
                spec.node_name
            );
            let preferred = serde_json::to_value(&spec.affinity)?;
            anyhow::ensure!(
                preferred
                    .to_string()
                    .contains(&format!("\"NotIn\",\"values\":[\"{refusing}\"]")),
                "the replacement prefers not {refusing}: {preferred}"
            );
            anyhow::ensure!(
                spec.node_selector.unwrap_or_default().contains_key(&label),
                "the template's own node selector is kept"
            );
            anyhow::ensure!(running.status.unwrap_or_default().pod_recreated == 1);
            Ok(())
        }
        .await;
        let _ = cordon(&nodes, &other, false).await;
        for node in [&refusing, &other] {
            let _ = set_label(&nodes, node, &label, false).await;
        }
        outcome
    })
    .await;
}

/// Sets the pod capacity `node` shows (`status.allocatable.pods`); the kubelet writes its
/// own value back on its next status update.
async fn set_allocatable_pods(nodes: &Api<Node>, node: &str, pods: &str) -> anyhow::Result<()> {
    let patch = json!({"status": {"allocatable": {"pods": pods}}});
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[tokio::test]
#[ignore = "disruptive: a node takes no new pod for a moment; test-all runs it alone with --ignored"]
async fn a_full_node_is_transient_and_the_workspace_starts_once_it_has_room() {
    with_namespace("outofpods", |client, ns| async move {
        wait_settled(&client).await?;
        let nodes: Api<Node> = Api::all(client.clone());
        let node = SECOND_NODE;
        let room = nodes
            .get(node)
            .await?
            .status
            .and_then(|s| s.allocatable)
            .and_then(|a| a.get("pods").map(|q| q.0.clone()))
            .ok_or_else(|| anyhow::anyhow!("{node} shows no pod capacity"))?;
        // The node looks full (room for one pod, and it runs several) until the rejection
        // is seen: the kubelet admits against the Node it reads, and restores its own
        // capacity within a status update, so the test keeps saying it is full meanwhile.
        set_allocatable_pods(&nodes, node, "1").await?;
        let full = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let filler = {
            let (nodes, full) = (nodes.clone(), full.clone());
            tokio::spawn(async move {
                while full.load(std::sync::atomic::Ordering::Acquire) {
                    let _ = set_allocatable_pods(&nodes, node, "1").await;
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            })
        };
        let outcome = async {
            let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
            let ws = workspace("ulla", json!({"nodeName": node}), json!({}))?;
            workspaces.create(&PostParams::default(), &ws).await?;
            let refused = rejected(&workspaces, "ulla", "OutOfpods").await?;
            anyhow::ensure!(
                rejection_class(&refused) == Some(RejectionClass::Transient),
                "OutOfpods is transient: {:?}",
                rejection_class(&refused)
            );
            full.store(false, std::sync::atomic::Ordering::Release);
            set_allocatable_pods(&nodes, node, &room).await?;
            let running = wait_phase(&workspaces, "ulla", WorkspacePhase::Running, TIMEOUT).await?;
            let recreated = running.status.unwrap_or_default().pod_recreated;
            anyhow::ensure!(recreated >= 1, "re-created: {recreated}");
            Ok(())
        }
        .await;
        full.store(false, std::sync::atomic::Ordering::Release);
        let _ = filler.await;
        set_allocatable_pods(&nodes, node, &room).await?;
        outcome
    })
    .await;
}
