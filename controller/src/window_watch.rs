//! The workspace reconciler's own cache of MaintenanceWindows (for notices and steering),
//! and the signal that makes workspaces look again when a window that can give notice or
//! steers (before or after the change) changes its spec or goes: only the workspaces in the namespaces either
//! version covers (`notice_reach`), or every workspace after a (re)list. Other windows'
//! edits move no notice. With 10,000 workspaces one signal to everyone costs about 20,000
//! API calls (docs/benchmarks.md, "Many windows").
//!
//! Its own watch rather than the window controller's cache: that controller already waits
//! on its store's readiness, and a kube `Store` wakes only one waiter, so a second wait on
//! the same store never returned. Windows are few; a second watch of them costs little.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use futures::channel::mpsc;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use lifeguard_api::MaintenanceWindow;
use lifeguard_api::window::CompiledWindow;

use crate::namespaces::NamespaceCache;
use crate::notice_reach::{self, Reach};

#[derive(Clone)]
pub struct WindowCache {
    pub store: Store<MaintenanceWindow>,
    /// Whether the first list is in: before, an empty cache would withdraw every notice.
    pub ready: Arc<AtomicBool>,
}

/// What the watch remembers of a window: its generation (status writes keep it) and, when
/// its spec can give notice, the window compiled (for the namespaces it covers).
type Seen = (Option<i64>, Option<CompiledWindow>);

type Namespaces = Option<BTreeMap<String, BTreeMap<String, String>>>;

/// Who may see a notice move after an event about window `name` at `generation`, compiled
/// as `after` when it can give notice: a new spec of a window that can give notice before
/// or after it (a window not seen before counts as unable before). `namespaces` is asked
/// only when the answer depends on them.
fn reach_of_apply(
    seen: &mut HashMap<String, Seen>,
    name: &str,
    generation: Option<i64>,
    after: Option<CompiledWindow>,
    namespaces: impl FnOnce() -> Namespaces,
) -> Reach {
    let before = match seen.insert(name.to_string(), (generation, after.clone())) {
        Some((seen_generation, _)) if seen_generation == generation => return Reach::Nobody,
        Some((_, before)) => before,
        None => None,
    };
    if before.is_none() && after.is_none() {
        return Reach::Nobody;
    }
    notice_reach::of_change(before.as_ref(), after.as_ref(), namespaces().as_ref())
}

/// Who may see a notice withdrawn by the deletion of window `name`.
fn reach_of_deletion(
    seen: &mut HashMap<String, Seen>,
    name: &str,
    namespaces: impl FnOnce() -> Namespaces,
) -> Reach {
    match seen.remove(name) {
        // Unknown (deleted while the watch relisted): everyone looks again, to be safe.
        None => Reach::Everyone,
        Some((_, None)) => Reach::Nobody,
        Some((_, before)) => notice_reach::of_change(before.as_ref(), None, namespaces().as_ref()),
    }
}

/// The window compiled, when its workspaces act on it: it can give notice, or it steers
/// their unscheduled pods off its nodes (enforcing and node-scoped: `workspace::steering`).
/// An invalid window does neither.
fn notifying(w: &MaintenanceWindow) -> Option<CompiledWindow> {
    let compiled = CompiledWindow::compile(w).ok()?;
    let steers = compiled.enforces() && compiled.node_scoped();
    (steers || lifeguard_api::notice::may_give_notice(&w.spec)).then_some(compiled)
}

/// The two signals of the window watch.
pub struct NoticeSignals {
    /// Every workspace looks again: after each (re)list, and for a window that covers
    /// every namespace.
    pub everyone: mpsc::UnboundedReceiver<()>,
    /// The workspaces in these namespaces look again.
    pub namespaces: mpsc::UnboundedReceiver<BTreeSet<String>>,
}

/// Starts watching MaintenanceWindows; `namespaces` narrows a change to the namespaces it
/// can move notices in.
pub fn watch(client: Client, namespaces: NamespaceCache) -> (WindowCache, NoticeSignals) {
    let (store, writer) = reflector::store();
    let ready = Arc::new(AtomicBool::new(false));
    let (to_everyone, everyone) = mpsc::unbounded();
    let (to_namespaces, in_namespaces) = mpsc::unbounded();
    let events = watcher(
        Api::<MaintenanceWindow>::all(client),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(writer);
    let is_ready = ready.clone();
    tokio::spawn(async move {
        let mut seen: HashMap<String, Seen> = HashMap::new();
        let known = || namespaces.all();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let reach = match event {
                Ok(watcher::Event::Init) => {
                    seen.clear();
                    Reach::Nobody
                }
                Ok(watcher::Event::InitApply(w)) => {
                    seen.insert(w.name_any(), (w.metadata.generation, notifying(&w)));
                    Reach::Nobody
                }
                // A (re)list may have missed deletions and changes: everyone looks again.
                Ok(watcher::Event::InitDone) => {
                    is_ready.store(true, Ordering::Release);
                    Reach::Everyone
                }
                Ok(watcher::Event::Apply(w)) => reach_of_apply(
                    &mut seen,
                    &w.name_any(),
                    w.metadata.generation,
                    notifying(&w),
                    known,
                ),
                Ok(watcher::Event::Delete(w)) => reach_of_deletion(&mut seen, &w.name_any(), known),
                Err(error) => {
                    tracing::warn!(%error, "watching maintenance windows failed; retrying");
                    Reach::Nobody
                }
            };
            let sent = match reach {
                Reach::Nobody => Ok(()),
                Reach::Everyone => to_everyone.unbounded_send(()).map_err(drop),
                Reach::Namespaces(names) => to_namespaces.unbounded_send(names).map_err(drop),
            };
            if sent.is_err() {
                return; // the controller stopped
            }
        }
    });
    let signals = NoticeSignals {
        everyone,
        namespaces: in_namespaces,
    };
    (WindowCache { store, ready }, signals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A window selecting the namespaces of `team` (every namespace without one), compiled
    /// when it can give notice.
    fn version(team: Option<&str>, notice: bool) -> Option<CompiledWindow> {
        let selector = team.map_or(json!({}), |t| json!({"matchLabels": {"team": t}}));
        let mut spec = json!({
            "start": "2030-01-01T02:00:00Z", "end": "2030-01-01T04:00:00Z",
            "drain": true, "namespaceSelector": selector,
        });
        if notice {
            spec["notice"] = json!("2h");
        }
        let w: MaintenanceWindow =
            serde_json::from_value(json!({"metadata": {"name": "w"}, "spec": spec}))
                .expect("window literal");
        notifying(&w)
    }

    fn known() -> Namespaces {
        let team = |t: &str| BTreeMap::from([("team".to_string(), t.to_string())]);
        Some(BTreeMap::from([
            ("a-dev".into(), team("a")),
            ("b-dev".into(), team("b")),
        ]))
    }

    fn only(names: &[&str]) -> Reach {
        Reach::Namespaces(names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_node_scoped_window_makes_workspaces_look_again_unless_it_only_warns() {
        let window = |enforcement: &str| -> MaintenanceWindow {
            serde_json::from_value(json!({"metadata": {"name": "pool-a"}, "spec": {
                "start": "2030-01-01T02:00:00Z", "end": "2030-01-01T04:00:00Z", "drain": true,
                "nodeSelector": {"matchLabels": {"pool": "a"}}, "enforcement": enforcement,
            }}))
            .expect("window literal")
        };
        assert!(notifying(&window("Enforce")).is_some(), "it steers pods");
        assert!(notifying(&window("Warn")).is_none(), "it steers nothing");
    }

    #[test]
    fn only_a_window_that_can_give_notice_makes_workspaces_look_again() {
        let mut seen = HashMap::new();
        let cases = [
            (
                "a new window giving notice",
                "upgrade",
                Some(1),
                None,
                true,
                Reach::Everyone,
            ),
            (
                "its status written",
                "upgrade",
                Some(1),
                None,
                true,
                Reach::Nobody,
            ),
            (
                "its spec changed",
                "upgrade",
                Some(2),
                None,
                true,
                Reach::Everyone,
            ),
            (
                "suspended: its notices go",
                "upgrade",
                Some(3),
                None,
                false,
                Reach::Everyone,
            ),
            (
                "edited while suspended",
                "upgrade",
                Some(4),
                None,
                false,
                Reach::Nobody,
            ),
            (
                "resumed: notices again",
                "upgrade",
                Some(5),
                None,
                true,
                Reach::Everyone,
            ),
            (
                "a new window without notice",
                "freeze",
                Some(1),
                None,
                false,
                Reach::Nobody,
            ),
            (
                "edited, still without notice",
                "freeze",
                Some(2),
                None,
                false,
                Reach::Nobody,
            ),
            (
                "given a notice",
                "freeze",
                Some(3),
                None,
                true,
                Reach::Everyone,
            ),
            (
                "narrowed to team a",
                "freeze",
                Some(4),
                Some("a"),
                true,
                Reach::Everyone,
            ),
            (
                "moved to team b: a and b hear",
                "freeze",
                Some(5),
                Some("b"),
                true,
                only(&["a-dev", "b-dev"]),
            ),
            (
                "edited, still team b",
                "freeze",
                Some(6),
                Some("b"),
                true,
                only(&["b-dev"]),
            ),
            (
                "team b loses its notice",
                "freeze",
                Some(7),
                Some("b"),
                false,
                only(&["b-dev"]),
            ),
            (
                "a team without namespaces",
                "new",
                Some(1),
                Some("c"),
                true,
                Reach::Nobody,
            ),
        ];
        for (what, name, generation, team, notice, want) in cases {
            let got = reach_of_apply(&mut seen, name, generation, version(team, notice), known);
            assert_eq!(got, want, "{what}");
        }
        seen.insert("quiet".into(), (Some(1), None));
        seen.insert("team-a".into(), (Some(1), version(Some("a"), true)));
        let deletions = [
            (
                "a notifying window for everyone",
                "upgrade",
                Reach::Everyone,
            ),
            ("a quiet window", "quiet", Reach::Nobody),
            ("a notifying window for team a", "team-a", only(&["a-dev"])),
            ("not seen: everyone, to be safe", "unknown", Reach::Everyone),
        ];
        for (what, name, want) in deletions {
            assert_eq!(reach_of_deletion(&mut seen, name, known), want, "{what}");
        }
    }

    #[test]
    fn a_narrowed_change_reaches_everyone_until_namespaces_are_known() {
        let mut seen = HashMap::new();
        let got = reach_of_apply(&mut seen, "w", Some(1), version(Some("a"), true), || None);
        assert_eq!(got, Reach::Everyone);
    }
}
