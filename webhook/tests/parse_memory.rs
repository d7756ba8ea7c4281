//! A hostile review's bulk is never built in memory: parsing a 5 MB body whose `oldObject`
//! (or a pod's `spec`) holds a 2.5-million-element array allocates next to nothing, where
//! building it as a `serde_json::Value` takes tens of megabytes (issue 12 item 2).
//!
//! Own test binary: it installs a counting global allocator, and holds a single test so
//! that no other test allocates while it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use lifeguard_webhook::review;
use serde_json::{Value, json};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters move.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes allocated at the peak of `f`, above what was live before it.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let result = f();
    (result, PEAK.load(Ordering::Relaxed) - base)
}

const ELEMENTS: usize = 2_500_000;

/// A review as text, with `"[0,0,...]"` spliced in where `BULK` stands.
fn hostile(request: Value) -> Vec<u8> {
    let text =
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
            .to_string();
    let bulk = format!("[{}0]", "0,".repeat(ELEMENTS - 1));
    text.replace("\"BULK\"", &bulk).into_bytes()
}

#[test]
fn hostile_bulk_is_never_materialised() {
    let workspace_update = hostile(json!({
        "uid": "u-1", "kind": {"group": "lifeguard.dev", "version": "v1alpha1", "kind": "Workspace"},
        "operation": "UPDATE", "namespace": "team-a", "name": "a",
        "object": {"metadata": {"name": "a"},
                   "spec": {"podTemplate": {"spec": {"containers": [{"name": "ide", "image": "busybox"}]}}}},
        "oldObject": {"metadata": {"name": "a", "managedFields": "BULK"}, "spec": {"junk": "BULK"}, "status": "BULK"},
    }));
    let pod_create = hostile(json!({
        "uid": "u-2", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "namespace": "team-a",
        "object": {"metadata": {"labels": {"lifeguard.dev/workspace": "a"}, "managedFields": "BULK"},
                   "spec": {"containers": "BULK"}},
        "oldObject": {"spec": "BULK"},
        "unknownField": "BULK",
    }));
    assert!(
        workspace_update.len() > 3 * 5_000_000,
        "the bodies are as big as intended"
    );

    // (what, body, most bytes parsing may allocate)
    let cases: Vec<(&str, &[u8], usize)> = vec![
        (
            "Workspace UPDATE with a huge oldObject",
            &workspace_update,
            64 * 1024,
        ),
        (
            "pod CREATE with a huge spec and unknown field",
            &pod_create,
            64 * 1024,
        ),
    ];
    for (what, body, limit) in cases {
        let (parsed, peak) = peak_during(|| review::parse(body));
        let request = match &parsed {
            Ok(request) => request,
            Err(error) => panic!("{what}: {error}"),
        };
        assert!(
            peak <= limit,
            "{what}: parsing allocated {peak} bytes (limit {limit})"
        );
        assert_eq!(
            request.uid.len(),
            3,
            "{what}: the fields decisions need are there"
        );
    }

    // The measurement is able to see a tree: one such array as a Value is tens of MB.
    let array = hostile(json!("BULK"));
    let (tree, peak) = peak_during(|| serde_json::from_slice::<Value>(&array));
    assert!(tree.is_ok());
    assert!(
        peak > 40 * 1024 * 1024,
        "a Value tree of the body took only {peak} bytes"
    );
}
