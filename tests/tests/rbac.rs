//! Least privilege, as the API server decides it: for each of lifeguard's ServiceAccounts a
//! SubjectAccessReview (what `kubectl auth can-i --as` asks) allows exactly what its
//! component needs and refuses neighbouring rights it must not have.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use lifeguard_e2e::{LIFEGUARD_NAMESPACE, client};

/// (verb, group, resource, namespace, name); "" for none.
type Request = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

async fn allowed(client: &Client, account: &str, request: Request) -> anyhow::Result<bool> {
    let (verb, group, resource, namespace, name) = request;
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_string())),
        None => (resource, None),
    };
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(format!(
                "system:serviceaccount:{LIFEGUARD_NAMESPACE}:{account}"
            )),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{LIFEGUARD_NAMESPACE}"),
            ]),
            resource_attributes: Some(ResourceAttributes {
                verb: some(verb),
                group: Some(group.to_string()),
                resource: some(resource),
                subresource,
                namespace: some(namespace),
                name: some(name),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

async fn check(account: &str, allow: &[Request], deny: &[Request]) -> anyhow::Result<()> {
    let client = client().await?;
    let mut wrong = Vec::new();
    for (want, requests) in [(true, allow), (false, deny)] {
        for request in requests {
            if allowed(&client, account, *request).await? != want {
                wrong.push(format!(
                    "{} {request:?}",
                    if want { "refused" } else { "allowed" }
                ));
            }
        }
    }
    anyhow::ensure!(wrong.is_empty(), "{account}: {wrong:#?}");
    Ok(())
}

#[tokio::test]
async fn the_webhook_reads_windows_and_workspace_pods_and_keeps_only_its_own_certificate() {
    let allow: &[Request] = &[
        ("list", "lifeguard.dev", "maintenancewindows", "", ""),
        ("get", "", "namespaces", "", "team-a"),
        (
            "patch",
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "",
            "lifeguard-validate",
        ),
        (
            "update",
            "",
            "secrets",
            LIFEGUARD_NAMESPACE,
            "lifeguard-webhook-tls",
        ),
        // Evictions of workspace pods (webhook/src/eviction.rs): the pod and its Workspace
        // are read, and the first eviction is recorded on the Workspace.
        ("get", "", "pods", "team-a", "ws-alice"),
        ("get", "lifeguard.dev", "workspaces", "team-a", "alice"),
        ("patch", "lifeguard.dev", "workspaces", "team-a", "alice"),
        ("get", "", "nodes", "", "lifeguard-node-1"),
    ];
    let deny: &[Request] = &[
        (
            "patch",
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "",
            "someone-else",
        ),
        ("get", "", "secrets", LIFEGUARD_NAMESPACE, "another-secret"),
        ("get", "", "secrets", "kube-system", ""),
        // Verbs the code never calls (webhook/src/manager.rs: get, create and update of
        // the Secret; get and patch of the configurations), so not granted; the
        // certificate tests (cert_rotation.rs) show the rest suffice.
        (
            "list",
            "",
            "secrets",
            LIFEGUARD_NAMESPACE,
            "lifeguard-webhook-tls",
        ),
        (
            "watch",
            "",
            "secrets",
            LIFEGUARD_NAMESPACE,
            "lifeguard-webhook-tls",
        ),
        (
            "patch",
            "",
            "secrets",
            LIFEGUARD_NAMESPACE,
            "lifeguard-webhook-tls",
        ),
        (
            "update",
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "",
            "lifeguard-validate",
        ),
        ("update", "lifeguard.dev", "workspaces", "team-a", "alice"),
        (
            "patch",
            "lifeguard.dev",
            "workspaces/status",
            "team-a",
            "alice",
        ),
        ("list", "", "pods", "team-a", ""),
        ("patch", "", "pods", "team-a", "ws-alice"),
        ("delete", "", "pods", "team-a", "ws-alice"),
        ("create", "", "pods", "team-a", ""),
    ];
    check("lifeguard-webhook", allow, deny).await.unwrap();
}

#[tokio::test]
async fn the_controller_manages_workspace_pods_and_only_its_own_lease() {
    let allow: &[Request] = &[
        (
            "patch",
            "lifeguard.dev",
            "workspaces/status",
            "team-a",
            "alice",
        ),
        (
            "patch",
            "lifeguard.dev",
            "maintenancewindows/status",
            "",
            "upgrade",
        ),
        ("create", "", "pods", "team-a", ""),
        ("delete", "", "pods", "team-a", "ws-alice"),
        (
            "patch",
            "coordination.k8s.io",
            "leases",
            LIFEGUARD_NAMESPACE,
            "lifeguard-controller",
        ),
        ("create", "events.k8s.io", "events", "team-a", ""),
        // Starting pods' mount failures (the start-blocker catalogue), watched.
        ("list", "", "events", "", ""),
        ("watch", "", "events", "", ""),
        // A node-scoped window's signal for upgrade tools: the drained label and the
        // window annotation on the Nodes it selects.
        ("patch", "", "nodes", "", "lifeguard-node-1"),
        // Backup agents' answers in the disposal handshake: read only.
        ("get", "lifeguard.dev", "disposalreceipts", "team-a", "u-1"),
        ("watch", "lifeguard.dev", "disposalreceipts", "", ""),
    ];
    let deny: &[Request] = &[
        ("create", "lifeguard.dev", "disposalreceipts", "team-a", ""),
        (
            "delete",
            "lifeguard.dev",
            "disposalreceipts",
            "team-a",
            "u-1",
        ),
        (
            "update",
            "coordination.k8s.io",
            "leases",
            LIFEGUARD_NAMESPACE,
            "another-lease",
        ),
        ("get", "", "secrets", "team-a", ""),
        ("delete", "lifeguard.dev", "workspaces", "team-a", "alice"),
        ("create", "lifeguard.dev", "maintenancewindows", "", ""),
        ("patch", "", "nodes/status", "", "lifeguard-node-1"),
        ("delete", "", "nodes", "", "lifeguard-node-1"),
        ("delete", "", "events", "team-a", ""),
    ];
    check("lifeguard-controller", allow, deny).await.unwrap();
}

#[tokio::test]
async fn the_prober_writes_nodes_and_throwaway_pods_only() {
    let allow: &[Request] = &[
        ("patch", "", "nodes/status", "", "lifeguard-node-1"),
        ("create", "", "pods", "lifeguard-probes", ""),
        ("delete", "", "pods", "lifeguard-probes", "probe"),
        ("create", "events.k8s.io", "events", "kube-system", ""),
    ];
    // The disposal stand-in's binding (tests/src/disposal_agent.rs) may add reading pods
    // and creating DisposalReceipts; writing any workspace pod stays refused either way.
    let deny: &[Request] = &[
        ("patch", "", "pods", "team-a", "ws-alice"),
        ("create", "", "pods", "team-a", ""),
        ("delete", "", "pods", "team-a", "ws-alice"),
        ("create", "", "pods", LIFEGUARD_NAMESPACE, ""),
        ("get", "", "secrets", LIFEGUARD_NAMESPACE, ""),
        ("create", "events.k8s.io", "events", "team-a", ""),
        ("delete", "", "nodes", "", "lifeguard-node-1"),
        ("patch", "lifeguard.dev", "workspaces", "team-a", "alice"),
    ];
    check("lifeguard-prober", allow, deny).await.unwrap();
}

#[tokio::test]
async fn the_receipts_agent_role_writes_receipts_only() {
    let admin = client().await.unwrap();
    // Binds the role, as a platform team would, to the account the check asks about.
    lifeguard_e2e::receipts_agent(&admin).await.unwrap();
    let allow: &[Request] = &[
        ("get", "", "pods", "team-a", "ws-alice"),
        ("list", "", "pods", "", ""),
        ("watch", "", "pods", "", ""),
        ("create", "lifeguard.dev", "disposalreceipts", "team-a", ""),
    ];
    let deny: &[Request] = &[
        ("patch", "", "pods", "team-a", "ws-alice"),
        ("update", "", "pods", "team-a", "ws-alice"),
        ("patch", "", "pods", "kube-system", "kube-proxy"),
        ("delete", "", "pods", "team-a", "ws-alice"),
        ("create", "", "pods", "team-a", ""),
        (
            "update",
            "lifeguard.dev",
            "disposalreceipts",
            "team-a",
            "u-1",
        ),
        (
            "patch",
            "lifeguard.dev",
            "disposalreceipts",
            "team-a",
            "u-1",
        ),
        (
            "delete",
            "lifeguard.dev",
            "disposalreceipts",
            "team-a",
            "u-1",
        ),
        ("get", "", "secrets", "team-a", ""),
        ("patch", "lifeguard.dev", "workspaces", "team-a", "alice"),
    ];
    check("lifeguard-e2e-receipts-agent", allow, deny)
        .await
        .unwrap();
}
