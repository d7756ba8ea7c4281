//! The workspace reconciler's own cache of MaintenanceWindows (for notices), and the
//! signal that makes every workspace look again when a window's spec changes or a window
//! goes.
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

/// Whether an event about window `name` at `generation` may change who carries a notice:
/// a window not seen before or with a new spec (status writes keep the generation).
fn spec_changed(
    seen: &mut HashMap<String, Option<i64>>,
    name: &str,
    generation: Option<i64>,
) -> bool {
    seen.insert(name.to_string(), generation) != Some(generation)
}

/// Starts watching MaintenanceWindows. Each `()` on the receiver means "every workspace
/// looks again": after each (re)list, on a changed spec, and on a deletion.
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
        let mut seen: HashMap<String, Option<i64>> = HashMap::new();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let look_again = match event {
                Ok(watcher::Event::Init) => {
                    seen.clear();
                    false
                }
                Ok(watcher::Event::InitApply(w)) => {
                    seen.insert(w.name_any(), w.metadata.generation);
                    false
                }
                // A (re)list may have missed deletions and changes: everyone looks again.
                Ok(watcher::Event::InitDone) => {
                    is_ready.store(true, Ordering::Release);
                    true
                }
                Ok(watcher::Event::Apply(w)) => {
                    spec_changed(&mut seen, &w.name_any(), w.metadata.generation)
                }
                Ok(watcher::Event::Delete(w)) => {
                    seen.remove(&w.name_any());
                    true
                }
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
    fn only_a_new_or_changed_spec_makes_workspaces_look_again() {
        let mut seen = HashMap::new();
        let cases = [
            ("a new window", "upgrade", Some(1), true),
            ("its status written", "upgrade", Some(1), false),
            ("its spec changed", "upgrade", Some(2), true),
            ("another window", "freeze", Some(1), true),
            ("status again", "upgrade", Some(2), false),
        ];
        for (what, name, generation, want) in cases {
            assert_eq!(spec_changed(&mut seen, name, generation), want, "{what}");
        }
    }
}
