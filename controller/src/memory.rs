//! Hands freed heap back to the kernel.
//!
//! Periodic passes used to allocate and free a few megabytes of list pages every interval
//! (reconciles, watch events and window passes still allocate and free in bursts). glibc
//! keeps the freed pages resident in its arenas: with 10,000 workspaces we measured 26 MB
//! in use but 47 MB held. `malloc_trim(0)` releases every free whole page of
//! every arena, not only the top of the heap; calling it after each pass measured
//! 57 MiB -> 45 MiB RSS with 10,000 workspaces. Other allocators return memory on their own.

/// Releases free heap pages; cheap (a few milliseconds), called once a sweep interval.
pub fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and touches only memory the allocator owns and
    // has already marked free; glibc makes it safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
