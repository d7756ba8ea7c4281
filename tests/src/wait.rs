use std::fmt::Debug;
use std::time::Duration;

use anyhow::bail;
use kube::api::Api;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Long enough for a pod to be scheduled, started and finished on the local node.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

/// How an object looks in a timeout's message: the whole of it, as the cluster had it.
fn shown<K: Serialize + Debug>(obj: &K) -> String {
    serde_json::to_string_pretty(obj).unwrap_or_else(|_| format!("{obj:?}"))
}

/// Polls `name` until `condition` holds and returns it. On timeout the error carries the
/// last state seen, so a failing test shows what the cluster actually did.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    what: &str,
    condition: impl Fn(&K) -> bool,
) -> anyhow::Result<K>
where
    K: Clone + DeserializeOwned + Serialize + Debug,
{
    let condition = &condition;
    poll_until(&format!("{name}: {what}"), timeout, || async move {
        match api.get_opt(name).await? {
            Some(obj) if condition(&obj) => Ok(Some(obj)),
            Some(obj) => bail!("last seen:\n{}", shown(&obj)),
            None => bail!("{name} does not exist"),
        }
    })
    .await
}

/// Polls until `name` no longer exists.
pub async fn wait_gone<K>(api: &Api<K>, name: &str, timeout: Duration) -> anyhow::Result<()>
where
    K: Clone + DeserializeOwned + Serialize + Debug,
{
    poll_until(&format!("{name}: gone"), timeout, || async move {
        match api.get_opt(name).await? {
            None => Ok(Some(())),
            Some(obj) => bail!("still there; last seen:\n{}", shown(&obj)),
        }
    })
    .await
}

/// Polls `check` until it yields a value and returns it. An error from `check` is kept as
/// the last state seen and polling goes on (a pod restarting refuses connections for a
/// moment); on timeout the error names `what` and that last state.
pub async fn poll_until<T, F>(
    what: &str,
    timeout: Duration,
    check: impl FnMut() -> F,
) -> anyhow::Result<T>
where
    F: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    poll_every(what, timeout, Duration::from_millis(250), check).await
}

/// `poll_until` looking every `interval`: the one polling loop of the e2e crate. A test
/// that measures how soon something happens looks more often than the default.
pub async fn poll_every<T, F>(
    what: &str,
    timeout: Duration,
    interval: Duration,
    mut check: impl FnMut() -> F,
) -> anyhow::Result<T>
where
    F: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => "condition not met".to_string(),
            Err(e) => format!("{e:#}"),
        };
        if tokio::time::Instant::now() >= deadline {
            bail!("{what}: not within {timeout:?}; last: {last}");
        }
        tokio::time::sleep(interval).await;
    }
}

/// Waits until Workspace `name` is in `phase`.
pub async fn wait_phase(
    api: &Api<lifeguard_api::Workspace>,
    name: &str,
    phase: lifeguard_api::WorkspacePhase,
    timeout: Duration,
) -> anyhow::Result<lifeguard_api::Workspace> {
    wait_for(api, name, timeout, &format!("{phase:?}"), |w| {
        w.status.as_ref().and_then(|s| s.phase) == Some(phase)
    })
    .await
}

/// Waits until `n` Workspaces in `api`'s namespace are in `phase` (listing them every 2 s:
/// for benches with hundreds of workspaces, where a watch per name would be too many).
pub async fn wait_all_in_phase(
    api: &Api<lifeguard_api::Workspace>,
    n: usize,
    phase: lifeguard_api::WorkspacePhase,
    timeout: Duration,
) -> anyhow::Result<()> {
    let what = format!("{n} workspaces {phase:?}");
    poll_every(&what, timeout, Duration::from_secs(2), || async {
        let listed = api.list(&kube::api::ListParams::default()).await?.items;
        let in_phase = listed.iter().filter(|w| w.phase() == Some(phase)).count();
        if in_phase < n {
            bail!("{in_phase} of {n} {phase:?}");
        }
        Ok(Some(()))
    })
    .await
}
