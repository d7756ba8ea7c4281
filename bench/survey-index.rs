//! What the windows' survey index (`controller/src/window/survey_index.rs`) costs the
//! controller at fleet size: the heap it holds per Workspace, and how long a drain's survey
//! from it takes.
//!
//! `cargo run --release -p lifeguard-controller --example survey-index -- [N]` (default
//! 10,000). No cluster: it feeds the index N Workspaces shaped like the mass-start bench's
//! once they run (a pod template, a status with conditions, on one of 20 nodes), as the
//! watch's first list would, and counts the heap with a counting allocator. Prints the
//! median of 11 surveys.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use kube::runtime::watcher::Event;
use lifeguard_api::window::CompiledWindow;
use lifeguard_api::{MaintenanceWindow, Workspace};
use lifeguard_controller::window::plan::{Drain, Survey};
use lifeguard_controller::window::survey_index::SurveyIndex;
use serde_json::json;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const NAMESPACE: &str = "bench-mass-start-6c1e9b540";

/// A running Workspace of the mass-start bench, as the watch delivers it.
fn running(i: usize) -> anyhow::Result<Workspace> {
    let now = "2026-11-29T13:30:00Z";
    let condition = |kind: &str, reason: &str| json!({"type": kind, "status": "True", "reason": reason, "message": "", "lastTransitionTime": now});
    Ok(serde_json::from_value(json!({
        "metadata": {
            "name": format!("ws-{i:05}"), "namespace": NAMESPACE,
            "uid": format!("5d1c7a8e-0000-4000-8000-{i:012}"), "resourceVersion": "123456",
            "generation": 1, "creationTimestamp": now,
            "finalizers": ["lifeguard.dev/workspace"],
        },
        "spec": {"podTemplate": {
            "metadata": {"labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "ide", "image": "registry.local/busybox:1.36",
                                     "command": ["sleep", "86400"]}],
                     "terminationGracePeriodSeconds": 1},
        }},
        "status": {
            "phase": "Running", "podName": format!("ws-{i:05}"),
            "nodeName": format!("hollow-node-{:02}", i % 20), "podStarts": 1, "podRecreated": 0,
            "observedGeneration": 1, "podReadyTime": now,
            "conditions": [condition("Ready", "PodReady"), condition("Starting", "Started")],
        },
    }))?)
}

fn window() -> anyhow::Result<CompiledWindow> {
    let w: MaintenanceWindow = serde_json::from_value(json!({
        "metadata": {"name": "upgrade"},
        "spec": {"start": "2026-11-29T13:00:00Z", "end": "2026-11-29T15:00:00Z", "drain": true},
    }))?;
    CompiledWindow::compile(&w).map_err(|e| anyhow::anyhow!("window: {e:?}"))
}

fn main() -> anyhow::Result<()> {
    let n: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|e| anyhow::anyhow!("N: {e}"))?,
        None => 10_000,
    };
    let index = SurveyIndex::default();
    let before = LIVE.load(Ordering::Relaxed);
    index.apply(&Event::Init);
    for i in 0..n {
        index.apply(&Event::InitApply(running(i)?.into()));
    }
    index.apply(&Event::InitDone);
    let held = LIVE.load(Ordering::Relaxed) - before;
    let one = serde_json::to_vec(&running(0)?)?.len();
    println!(
        "survey index of {n} running workspaces: {:.2} MiB held, {:.0} bytes a workspace (each {one} bytes as JSON)",
        held as f64 / (1024.0 * 1024.0),
        held as f64 / n as f64,
    );

    let window = window()?;
    let start = "2026-11-29T13:00:00Z".parse()?;
    let now = "2026-11-29T13:30:00Z".parse()?;
    let namespaces = BTreeMap::new();
    let mut took: Vec<Duration> = Vec::new();
    let mut to_stop = 0;
    for _ in 0..11 {
        let surveying = Instant::now();
        let mut survey = Survey {
            drain: Some(Drain::at(start, now)),
            notified: None,
            nodes: None,
            resume: None,
        };
        index.fold_pages(200, |page| survey.add(&window, page, &namespaces));
        took.push(surveying.elapsed());
        to_stop = survey.drain.map_or(0, |d| d.to_stop.len());
    }
    took.sort();
    println!(
        "a drain's survey from it: {:.1} ms median of 11 (min {:.1}, max {:.1}), {to_stop} to stop",
        took[5].as_secs_f64() * 1e3,
        took[0].as_secs_f64() * 1e3,
        took[10].as_secs_f64() * 1e3,
    );
    Ok(())
}
