//! The node-scoped ValidatingAdmissionPolicies (manifests/components/node-scoped-policies),
//! enforced by the live API server: a request with the prober's own token, bound to its pod
//! on node 1 as the kubelet mounts it, may answer the disposal handshake on a workspace pod
//! of node 1 being stopped and patch node 1, and nothing else: another node's pod or Node,
//! or another field of its own node's pod, is refused by the policy's message. Every write
//! is a dry run, so nothing changes and no other test is disturbed.

use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::names::{DISPOSAL_RESULT_ANNOTATION, WORKSPACE_LABEL};
use lifeguard_e2e::prober::PROBED_NODE;
use lifeguard_e2e::{BUSYBOX_IMAGE, LIFEGUARD_NAMESPACE, SECOND_NODE, with_namespace};
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
    let out = Command::new("kubectl")
        .args([
            "-n",
            LIFEGUARD_NAMESPACE,
            "create",
            "token",
            PROBER,
            "--duration",
            "10m",
        ])
        .args([
            "--bound-object-kind",
            "Pod",
            "--bound-object-name",
            &pod.name_any(),
        ])
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
    let mark = Patch::Merge(json!({"metadata": {"labels": {"lifeguard.dev/e2e-mark": "x"}}}));
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
