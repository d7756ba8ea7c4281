//! The node-scoped ValidatingAdmissionPolicies (manifests/components/node-scoped-policies),
//! enforced by the live API server: a request with the prober's own token, bound to its pod
//! on node 1 as the kubelet mounts it, may answer the disposal handshake on a workspace pod
//! of node 1 being stopped and patch node 1, and nothing else: another node's pod or Node,
//! or another field of its own node's pod, is refused by the policy's message. Every write
//! is a dry run, so nothing changes and no other test is disturbed.
//!
//! The policy lifeguard-node-writes (manifests/prober/node-writes-policy.yaml) keeps the
//! prober's and the controller's Node writes to lifeguard's own label, annotation, taint
//! and condition: with their own tokens, a cordon or uncordon, another's taint or label, or
//! the kubelet's condition is refused, and their own writes are admitted.

use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::names::{
    DISPOSAL_RESULT_ANNOTATION, NODE_CONDITION, NODE_DRAINED_LABEL, NODE_TAINT_KEY,
    NODE_WINDOW_ANNOTATION, WORKSPACE_LABEL,
};
use lifeguard_e2e::prober::PROBED_NODE;
use lifeguard_e2e::{
    BUSYBOX_IMAGE, LIFEGUARD_NAMESPACE, SECOND_NODE, client, unique_name, with_namespace,
};
use serde_json::json;

const PROBER: &str = "lifeguard-prober";
/// The test's own finalizer, holding its pods in deletion while it asks.
const HOLD: &str = "e2e.lifeguard.dev/hold";

/// The prober's pod on `node`.
async fn prober_pod(client: &Client, node: &str) -> anyhow::Result<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), LIFEGUARD_NAMESPACE);
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    pods.list(&params)
        .await?
        .items
        .into_iter()
        .find(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.service_account_name.as_deref())
                == Some(PROBER)
        })
        .with_context(|| format!("no pod of ServiceAccount {PROBER} on {node}"))
}

/// A client holding a token of the prober's ServiceAccount bound to `pod`, as the kubelet
/// projects it into that pod (the API server then puts the pod's node into the request's
/// user info, which the policies compare).
async fn as_prober_on(pod: &Pod) -> anyhow::Result<Client> {
    as_service_account(PROBER, Some(pod)).await
}

/// A client holding a token of lifeguard's ServiceAccount `account`, bound to `pod` if given.
async fn as_service_account(account: &str, pod: Option<&Pod>) -> anyhow::Result<Client> {
    let bound = pod
        .map(|p| {
            vec![
                "--bound-object-kind".to_string(),
                "Pod".to_string(),
                "--bound-object-name".to_string(),
                p.name_any(),
            ]
        })
        .unwrap_or_default();
    let out = Command::new("kubectl")
        .args([
            "-n",
            LIFEGUARD_NAMESPACE,
            "create",
            "token",
            account,
            "--duration",
            "10m",
        ])
        .args(bound)
        .output()
        .context("running kubectl create token")?;
    ensure!(
        out.status.success(),
        "kubectl create token: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout)?.trim().to_string();
    let mut config = lifeguard_e2e::cluster_config().await?;
    config.auth_info = serde_json::from_value(json!({"token": token}))?;
    Ok(Client::try_from(config)?)
}

fn dry_run() -> PatchParams {
    PatchParams {
        dry_run: true,
        ..PatchParams::default()
    }
}

/// Ok for an admitted dry run; the refusal's message for a 403, which must name `policy`.
fn refused_by(
    outcome: Result<impl Sized, kube::Error>,
    policy: &str,
) -> anyhow::Result<Option<String>> {
    match outcome {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(s)) if s.code == 403 || s.code == 422 => {
            ensure!(
                s.message.contains(policy),
                "refused, but not by {policy}: {}",
                s.message
            );
            Ok(Some(s.message))
        }
        Err(e) => bail!("unexpected error: {e}"),
    }
}

#[tokio::test]
async fn the_api_server_keeps_the_prober_to_its_own_node() {
    with_namespace("node-scoped", |client, ns| async move {
        // What a platform team binds for an agent that answers on the pod itself, here in
        // this test's namespace only.
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "prober-disposal-agent"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "lifeguard-disposal-agent"},
            "subjects": [{"kind": "ServiceAccount", "name": PROBER, "namespace": LIFEGUARD_NAMESPACE}]
        }))?;
        Api::<RoleBinding>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &binding)
            .await?;
        // Workspace pods being stopped (the handshake is answered only then), held by a
        // finalizer of the test's so they stay while it asks.
        let admin_pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        for (name, node) in [("ws-here", PROBED_NODE), ("ws-there", SECOND_NODE)] {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {WORKSPACE_LABEL: name}, "finalizers": [HOLD]},
                "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "ide", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                         "command": ["sleep", "3600"]}]}
            }))?;
            admin_pods.create(&PostParams::default(), &pod).await?;
            admin_pods.delete(name, &DeleteParams::default()).await?;
        }
        let outcome = ask_as_the_prober(&client, &ns).await;
        for name in ["ws-here", "ws-there"] {
            let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
            let _ = admin_pods.patch(name, &PatchParams::default(), &release).await;
        }
        outcome
    })
    .await;
}

async fn ask_as_the_prober(client: &Client, ns: &str) -> anyhow::Result<()> {
    let prober = as_prober_on(&prober_pod(client, PROBED_NODE).await?).await?;
    let pods: Api<Pod> = Api::namespaced(prober.clone(), ns);
    let answer =
        Patch::Merge(json!({"metadata": {"annotations": {DISPOSAL_RESULT_ANNOTATION: "saved"}}}));
    let agent_policy = "lifeguard-disposal-agent-own-node";

    let own = refused_by(
        pods.patch("ws-here", &dry_run(), &answer).await,
        agent_policy,
    )?;
    ensure!(
        own.is_none(),
        "its answer on its own node's workspace pod was refused: {own:?}"
    );
    let other = refused_by(
        pods.patch("ws-there", &dry_run(), &answer).await,
        agent_policy,
    )?;
    let other = other.context("its answer on node 2's pod was admitted")?;
    ensure!(
        other.contains("only on pods of the node its own pod runs on"),
        "{other}"
    );
    let relabel = Patch::Merge(json!({"metadata": {"labels": {"team": "someone-else"}}}));
    let field = refused_by(
        pods.patch("ws-here", &dry_run(), &relabel).await,
        agent_policy,
    )?;
    let field = field.context("a label change on its own node's pod was admitted")?;
    ensure!(field.contains("may change only the annotation"), "{field}");

    let nodes: Api<Node> = Api::all(prober);
    let node_policy = "lifeguard-prober-own-node";
    // Its own label (lifeguard-node-writes refuses any other).
    let mark = Patch::Merge(json!({"metadata": {"labels": {NODE_TAINT_KEY: "probes-failing"}}}));
    let own = refused_by(
        nodes.patch(PROBED_NODE, &dry_run(), &mark).await,
        node_policy,
    )?;
    ensure!(
        own.is_none(),
        "a patch of its own Node was refused: {own:?}"
    );
    let other = refused_by(
        nodes.patch(SECOND_NODE, &dry_run(), &mark).await,
        node_policy,
    )?;
    let other = other.context("a patch of node 2 was admitted")?;
    ensure!(
        other.contains("may change only the Node its own pod runs on"),
        "{other}"
    );
    Ok(())
}

const NODE_WRITES: &str = "lifeguard-node-writes";

/// Ok when the dry run was admitted; else the refusal must be lifeguard-node-writes' and
/// contain `says`.
fn expect(
    outcome: Result<Node, kube::Error>,
    admitted: bool,
    says: &str,
    what: &str,
) -> anyhow::Result<()> {
    match refused_by(outcome, NODE_WRITES).with_context(|| what.to_string())? {
        None if admitted => Ok(()),
        None => bail!("{what}: admitted"),
        Some(message) if admitted => bail!("{what}: refused: {message}"),
        Some(message) => {
            ensure!(message.contains(says), "{what}: {message}");
            Ok(())
        }
    }
}

#[tokio::test]
async fn the_api_server_keeps_lifeguards_node_writes_to_its_own_keys() -> anyhow::Result<()> {
    let client = client().await?;
    let admin_nodes: Api<Node> = Api::all(client.clone());

    // The prober, with its pod-bound token, on its own node.
    let prober = Api::<Node>::all(as_prober_on(&prober_pod(&client, PROBED_NODE).await?).await?);
    let node = admin_nodes.get(PROBED_NODE).await?;
    let taints: Vec<serde_json::Value> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| t.iter().map(serde_json::to_value).collect())
        .transpose()?
        .unwrap_or_default();
    let with = |extra: serde_json::Value| {
        let mut all = taints.clone();
        all.push(extra);
        all
    };
    let ours = json!({"key": NODE_TAINT_KEY, "value": "probes-failing", "effect": "NoSchedule"});
    let unhealthy = Patch::Merge(json!({
        "metadata": {"labels": {NODE_TAINT_KEY: "probes-failing"}},
        "spec": {"taints": with(ours)},
    }));
    let spec = "may not cordon or uncordon a Node";
    expect(
        prober.patch(PROBED_NODE, &dry_run(), &unhealthy).await,
        true,
        "",
        "the prober's own taint and label",
    )?;
    let condition = Patch::Strategic(json!({"status": {"conditions": [{
        "type": NODE_CONDITION, "status": "False", "reason": "E2E", "message": "dry run",
        "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z",
    }]}}));
    expect(
        prober
            .patch_status(PROBED_NODE, &dry_run(), &condition)
            .await,
        true,
        "",
        "the prober's own condition",
    )?;
    let cordon = Patch::Merge(json!({"spec": {"unschedulable": true}}));
    expect(
        prober.patch(PROBED_NODE, &dry_run(), &cordon).await,
        false,
        spec,
        "the prober cordons its node",
    )?;
    let foreign = Patch::Merge(
        json!({"spec": {"taints": with(json!({"key": "e2e.example.com/gpu", "effect": "NoSchedule"}))}}),
    );
    expect(
        prober.patch(PROBED_NODE, &dry_run(), &foreign).await,
        false,
        spec,
        "the prober adds another's taint",
    )?;
    let restricted = Patch::Merge(
        json!({"metadata": {"labels": {"node-restriction.kubernetes.io/pool": "gpu"}}}),
    );
    expect(
        prober.patch(PROBED_NODE, &dry_run(), &restricted).await,
        false,
        "only its own Node labels",
        "the prober sets a node-restriction label",
    )?;
    let ready = Patch::Strategic(
        json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "E2E", "message": "dry run"}]}}),
    );
    expect(
        prober.patch_status(PROBED_NODE, &dry_run(), &ready).await,
        false,
        "only its own Node condition",
        "the prober changes the kubelet's Ready condition",
    )?;

    // The controller, on a Node of no kubelet that someone else cordoned, tainted and
    // labelled (a real node cannot be cordoned here without disturbing other tests).
    let phantom = unique_name("e2e-phantom");
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": phantom, "labels": {"e2e.example.com/pool": "a"}},
        "spec": {"unschedulable": true,
                 "taints": [{"key": "e2e.example.com/dedicated", "value": "ci", "effect": "NoSchedule"}]},
    }))?;
    admin_nodes.create(&PostParams::default(), &node).await?;
    let outcome = async {
        let controller = Api::<Node>::all(as_service_account("lifeguard-controller", None).await?);
        let mark = Patch::Merge(json!({"metadata": {
            "labels": {NODE_DRAINED_LABEL: "false"},
            "annotations": {NODE_WINDOW_ANNOTATION: "e2e"},
        }}));
        expect(controller.patch(&phantom, &dry_run(), &mark).await, true, "", "the controller's drained mark")?;
        let uncordon = Patch::Merge(json!({"spec": {"unschedulable": null}}));
        expect(controller.patch(&phantom, &dry_run(), &uncordon).await, false, spec, "the controller uncordons")?;
        let untaint = Patch::Merge(json!({"spec": {"taints": []}}));
        expect(controller.patch(&phantom, &dry_run(), &untaint).await, false, spec, "the controller removes another's taint")?;
        let relabel = Patch::Merge(json!({"metadata": {"labels": {"e2e.example.com/pool": null, "node-restriction.kubernetes.io/pool": "gpu"}}}));
        expect(controller.patch(&phantom, &dry_run(), &relabel).await, false, "only its own Node labels", "the controller changes another's labels")?;
        Ok(())
    }
    .await;
    admin_nodes
        .delete(&phantom, &DeleteParams::default())
        .await?;
    outcome
}
