//! Chaos: 100 workspaces start while the kubelet rejects about a fifth of the starts and
//! the controller's pods are killed (grace 0 or graceful, at random) over and over.
//! In the end every workspace runs or has legitimately given up, no workspace has a second
//! pod, no pod is stuck Terminating and none keeps our finalizer. Its own test binary, so
//! no other test shares the controller it kills.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use lifeguard_api::names::{POD_FINALIZER, WORKSPACE_LABEL};
use lifeguard_api::{Workspace, WorkspacePhase};
use lifeguard_e2e::{
    Component, Rejector, apply_crds, controller_leader, kill_pod, leader_and_standby, node_name,
    poll_every, ready_pods, sleeping_workspace, stop_pod, unique_name, with_namespace,
};

const WORKSPACES: usize = 100;
const CHAOS: Duration = Duration::from_secs(100);
const SETTLE: Duration = Duration::from_secs(300);
/// The controller's default; a Failed workspace must have used all of them.
const MAX_RETRIES: u32 = 3;

/// Kills controller pods until `running` clears; returns the kills. Each round takes the
/// leader's pod (or, one time in four, the standby's) and deletes it with grace 0 (SIGKILL,
/// the Lease is not released) or gracefully (SIGTERM, the Lease is released), at random;
/// the Deployment replaces it, as it would after a crash or an eviction.
async fn kill_repeatedly(client: Client, running: Arc<AtomicBool>) -> anyhow::Result<u32> {
    let mut kills = 0;
    while running.load(Ordering::Acquire) {
        tokio::time::sleep(Duration::from_millis(fastrand::u64(3000..10000))).await;
        let pods = ready_pods(&client, Component::Controller).await?;
        let leader = controller_leader(&client).await?;
        let take_standby = fastrand::u8(0..4) == 0;
        let victim = pods
            .iter()
            .find(|p| (Some(p.name_any()) == leader) != take_standby)
            .or(pods.first());
        let Some(victim) = victim else { continue };
        if fastrand::bool() {
            kill_pod(&client, &victim.name_any()).await?;
        } else {
            stop_pod(&client, &victim.name_any()).await?;
        }
        kills += 1;
    }
    // Leave two Ready replicas, one of them leading, for the tests that follow: a last kill
    // leaves the Lease naming the dead pod until it expires.
    leader_and_standby(&client).await?;
    Ok(kills)
}

fn phase(ws: &Workspace) -> Option<WorkspacePhase> {
    ws.status.as_ref().and_then(|s| s.phase)
}

fn settled(ws: &Workspace) -> bool {
    matches!(
        phase(ws),
        Some(WorkspacePhase::Running | WorkspacePhase::Failed)
    )
}

/// Creates the workspaces one by one over `spread`, so that their starts meet the
/// rejection spells in proportion (created at once, they would all start in one spell).
async fn create_all(
    client: &Client,
    ns: &str,
    rejector: &Rejector,
    spread: Duration,
) -> anyhow::Result<()> {
    let api: Api<Workspace> = Api::namespaced(client.clone(), ns);
    let pause = spread / WORKSPACES as u32;
    for i in 0..WORKSPACES {
        let ws = sleeping_workspace(&format!("chaos-{i:03}"), rejector)?;
        api.create(&PostParams::default(), &ws).await?;
        tokio::time::sleep(pause).await;
    }
    Ok(())
}

#[tokio::test]
async fn workspaces_survive_rejections_and_controller_kills() {
    with_namespace("chaos", |client, ns| async move {
        apply_crds(&client).await?;
        let node = node_name(&client).await?;
        let rejector = Arc::new(Rejector::new(
            &client,
            &node,
            &format!("lifeguard.dev/{}", unique_name("e2e-chaos")),
        ));
        rejector.admit().await?;
        let running = Arc::new(AtomicBool::new(true));
        let flapper = {
            let (rejector, running) = (rejector.clone(), running.clone());
            tokio::spawn(async move { rejector.flap(running).await })
        };
        let killer = tokio::spawn(kill_repeatedly(client.clone(), running.clone()));
        let created = create_all(&client, &ns, &rejector, CHAOS).await;
        // Re-creations of the last starts meet the chaos too.
        tokio::time::sleep(Duration::from_secs(15)).await;
        running.store(false, Ordering::Release);
        let spells = flapper.await.context("flapper")?;
        rejector.admit().await?;
        let kills = killer.await.context("killer")??;
        let spells = spells?;
        created?;
        eprintln!("chaos: {kills} controller kills, {spells} rejection spells");

        let workspaces: Api<Workspace> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let (workspaces, pods) = (&workspaces, &pods);
        let list = poll_every(
            "settled after the chaos",
            SETTLE,
            Duration::from_secs(2),
            || async move {
                let list = workspaces.list(&ListParams::default()).await?.items;
                let pending: Vec<String> = list
                    .iter()
                    .filter(|w| !settled(w))
                    .map(|w| format!("{} ({:?})", w.name_any(), phase(w)))
                    .collect();
                let terminating = pods
                    .list(&ListParams::default())
                    .await?
                    .items
                    .iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_some())
                    .count();
                if pending.is_empty() && terminating == 0 {
                    return Ok(Some(list));
                }
                anyhow::bail!(
                    "{} unsettled: {pending:?}; {terminating} pods terminating",
                    pending.len()
                )
            },
        )
        .await?;
        assert_eq!(list.len(), WORKSPACES);

        let mut pods_by_workspace: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        for pod in pods.list(&ListParams::default()).await?.items {
            let owner = pod
                .labels()
                .get(WORKSPACE_LABEL)
                .cloned()
                .unwrap_or_default();
            pods_by_workspace.entry(owner).or_default().push(pod);
        }
        let (mut recreated, mut failed) = (0, 0);
        for ws in &list {
            let name = ws.name_any();
            let status = ws.status.clone().unwrap_or_default();
            let pods = pods_by_workspace.remove(&name).unwrap_or_default();
            recreated += status.pod_recreated;
            match status.phase {
                Some(WorkspacePhase::Running) => {
                    assert_eq!(pods.len(), 1, "{name}: exactly one pod");
                    assert_eq!(
                        pods[0].name_any(),
                        format!("ws-{name}"),
                        "{name}: same pod name"
                    );
                    assert!(
                        pods[0].metadata.deletion_timestamp.is_none(),
                        "{name}: pod not terminating"
                    );
                }
                _ => {
                    failed += 1;
                    assert_eq!(
                        status.pod_recreated, MAX_RETRIES,
                        "{name}: Failed only after all retries: {status:?}"
                    );
                    assert!(
                        status.last_rejection.is_some(),
                        "{name}: failed by rejection"
                    );
                    assert!(pods.len() <= 1, "{name}: at most one pod");
                }
            }
            for pod in &pods {
                let ours = pod.finalizers().iter().any(|f| f == POD_FINALIZER);
                assert!(
                    !(ours && pod.metadata.deletion_timestamp.is_some()),
                    "{name}: our finalizer on a deleted pod"
                );
            }
        }
        assert!(
            pods_by_workspace.is_empty(),
            "pods that belong to no workspace: {:?}",
            pods_by_workspace.keys().collect::<Vec<_>>()
        );
        eprintln!(
            "chaos: {recreated} re-creations, {failed} workspaces gave up, {} running",
            WORKSPACES - failed
        );
        // The run has to have exercised recovery, or it proves nothing.
        assert!(
            recreated >= 8,
            "only {recreated} re-creations: rejections did not happen"
        );
        assert!(kills >= 5, "only {kills} controller kills");
        Ok(())
    })
    .await;
}
