//! The workspace reconciler's own cache of MaintenanceWindows (for notices), and the
//! signal that makes every workspace look again when a window that can give notice (before
//! or after the change) changes its spec or goes. Other windows' edits move no notice, and
//! with 10,000 workspaces one signal costs about 20,000 API calls (docs/benchmarks.md,
//! "Many windows").
//!
//! Its own watch rather than the window controller's cache: that controller already waits
//! on its store's readiness, and a kube `Store` wakes only one waiter, so a second wait on
//! the same store never returned. Windows are few; a second watch of them costs little.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use futures::channel::mpsc;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use lifeguard_api::MaintenanceWindow;

#[derive(Clone)]
pub struct WindowCache {
    pub store: Store<MaintenanceWindow>,
    /// Whether the first list is in: before, an empty cache would withdraw every notice.
    pub ready: Arc<AtomicBool>,
}

/// What the watch remembers of a window: its generation (status writes keep it) and
/// whether its spec can give notice.
type Seen = (Option<i64>, bool);

/// Whether an event about window `name` at `generation`, able to give notice or not
/// (`notifies`), may change who carries a notice: a new spec of a window that can give
/// notice before or after it (a window not seen before counts as unable before).
fn notices_may_move(
    seen: &mut HashMap<String, Seen>,
    name: &str,
    generation: Option<i64>,
    notifies: bool,
) -> bool {
    match seen.insert(name.to_string(), (generation, notifies)) {
        Some((before, _)) if before == generation => false,
        Some((_, notified)) => notified || notifies,
        None => notifies,
    }
}

/// Whether the deletion of window `name` may withdraw notices.
fn deletion_moves_notices(seen: &mut HashMap<String, Seen>, name: &str) -> bool {
    // Unknown (deleted while the watch relisted): look again to be safe.
    seen.remove(name).is_none_or(|(_, notified)| notified)
}

fn notifies(w: &MaintenanceWindow) -> bool {
    lifeguard_api::notice::may_give_notice(&w.spec)
}

/// Starts watching MaintenanceWindows. Each `()` on the receiver means "every workspace
/// looks again": after each (re)list, and on a changed spec or a deletion of a window that
/// can give notice.
pub fn watch(client: Client) -> (WindowCache, mpsc::UnboundedReceiver<()>) {
    let (store, writer) = reflector::store();
    let ready = Arc::new(AtomicBool::new(false));
    let (changed, changes) = mpsc::unbounded();
    let events = watcher(
        Api::<MaintenanceWindow>::all(client),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(writer);
    let is_ready = ready.clone();
    tokio::spawn(async move {
        let mut seen: HashMap<String, Seen> = HashMap::new();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let look_again = match event {
                Ok(watcher::Event::Init) => {
                    seen.clear();
                    false
                }
                Ok(watcher::Event::InitApply(w)) => {
                    seen.insert(w.name_any(), (w.metadata.generation, notifies(&w)));
                    false
                }
                // A (re)list may have missed deletions and changes: everyone looks again.
                Ok(watcher::Event::InitDone) => {
                    is_ready.store(true, Ordering::Release);
                    true
                }
                Ok(watcher::Event::Apply(w)) => notices_may_move(
                    &mut seen,
                    &w.name_any(),
                    w.metadata.generation,
                    notifies(&w),
                ),
                Ok(watcher::Event::Delete(w)) => deletion_moves_notices(&mut seen, &w.name_any()),
                Err(error) => {
                    tracing::warn!(%error, "watching maintenance windows failed; retrying");
                    false
                }
            };
            if look_again && changed.unbounded_send(()).is_err() {
                return;
            }
        }
    });
    (WindowCache { store, ready }, changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_window_that_can_give_notice_makes_workspaces_look_again() {
        let mut seen = HashMap::new();
        let cases = [
            ("a new window giving notice", "upgrade", Some(1), true, true),
            ("its status written", "upgrade", Some(1), true, false),
            ("its spec changed", "upgrade", Some(2), true, true),
            ("suspended: its notices go", "upgrade", Some(3), false, true),
            ("edited while suspended", "upgrade", Some(4), false, false),
            ("resumed: notices again", "upgrade", Some(5), true, true),
            (
                "a new window without notice",
                "freeze",
                Some(1),
                false,
                false,
            ),
            (
                "edited, still without notice",
                "freeze",
                Some(2),
                false,
                false,
            ),
            ("given a notice", "freeze", Some(3), true, true),
        ];
        for (what, name, generation, notifies, want) in cases {
            assert_eq!(
                notices_may_move(&mut seen, name, generation, notifies),
                want,
                "{what}"
            );
        }
        seen.insert("quiet".into(), (Some(1), false));
        assert!(
            deletion_moves_notices(&mut seen, "upgrade"),
            "a notifying window deleted"
        );
        assert!(
            !deletion_moves_notices(&mut seen, "quiet"),
            "a quiet window deleted"
        );
        assert!(
            deletion_moves_notices(&mut seen, "unknown"),
            "not seen: look again"
        );
    }
}
