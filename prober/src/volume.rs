//! The volume check: a throwaway directory on the node's workspace storage, written,
//! fsynced, read back and removed. Blocking; the caller runs it under a `Watchdog`.
//!
//! The directory's name carries its expiry (`.lifeguard-probe-<unix seconds>-<nonce>`), so
//! whatever a prober killed mid-check leaves behind is recognised and removed by the
//! janitor of any later prober, without a record kept anywhere else.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use crate::mounts::{self, StorageRule};

pub const DIR_PREFIX: &str = ".lifeguard-probe-";
const MOUNTINFO: &str = "/proc/self/mountinfo";
const FILE_NAME: &str = "probe";

pub fn dir_name(expires_unix: i64, nonce: u64) -> String {
    format!("{DIR_PREFIX}{expires_unix}-{nonce:016x}")
}

/// The expiry in a throwaway directory's name; None for anything that is not ours.
pub fn expiry_of(name: &str) -> Option<i64> {
    let rest = name.strip_prefix(DIR_PREFIX)?;
    let (expiry, nonce) = rest.split_once('-')?;
    if nonce.is_empty() || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    expiry.parse().ok()
}

/// Outcome of one volume run: what the janitor removed, and the check's own result.
#[derive(Debug)]
pub struct VolumeRun {
    pub reaped: u32,
    pub sweep_error: Option<String>,
    pub result: Result<(), String>,
}

/// Mount check, janitor, then check. `now_unix` and `nonce` come from the caller so tests
/// can pin them. Storage that is not the intended filesystem is a failure, and nothing is
/// written to it (it is most likely the node's root disk).
pub fn run(root: &Path, rule: &StorageRule, ttl_secs: i64, now_unix: i64, nonce: u64) -> VolumeRun {
    if let Err(error) = storage_is_mounted(root, rule) {
        return VolumeRun {
            reaped: 0,
            sweep_error: None,
            result: Err(error),
        };
    }
    let (reaped, sweep_error) = match sweep(root, now_unix) {
        Ok(n) => (n, None),
        Err(e) => (0, Some(e)),
    };
    let result = check(root, now_unix + ttl_secs, nonce);
    VolumeRun {
        reaped,
        sweep_error,
        result,
    }
}

/// Reads this process's mount table; read on every run, so a disk mounted (or unmounted)
/// after the prober started is seen (the volume needs `mountPropagation:
/// HostToContainer`).
fn storage_is_mounted(root: &Path, rule: &StorageRule) -> Result<(), String> {
    if !rule.checks_anything() {
        return Ok(());
    }
    let mountinfo = fs::read_to_string(MOUNTINFO)
        .map_err(|e| format!("cannot tell what workspace storage is mounted: {MOUNTINFO}: {e}"))?;
    // Symlinks resolved, as mount points are listed; a path that does not resolve is
    // compared as given and found to be no mount point.
    let path = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    mounts::verify(&mounts::parse(&mountinfo), &path, rule)
}

pub fn check(root: &Path, expires_unix: i64, nonce: u64) -> Result<(), String> {
    let dir = root.join(dir_name(expires_unix, nonce));
    let outcome = write_read_remove(&dir, nonce);
    if outcome.is_err() {
        // Best effort: on a broken disk this fails too, and the janitor retries later.
        let _ = fs::remove_dir_all(&dir);
    }
    outcome
}

fn write_read_remove(dir: &Path, nonce: u64) -> Result<(), String> {
    let step = |what: &'static str| move |e: std::io::Error| format!("{what}: {e}");
    fs::create_dir(dir).map_err(step("create directory"))?;
    let file = dir.join(FILE_NAME);
    // A few KiB with a per-run pattern: a stale or zeroed page would not compare equal.
    let payload: Vec<u8> = (0..4096u32)
        .map(|i| (nonce.rotate_left(i % 64) as u8) ^ (i as u8))
        .collect();
    let mut f = fs::File::create(&file).map_err(step("create file"))?;
    f.write_all(&payload).map_err(step("write"))?;
    f.sync_all().map_err(step("fsync"))?;
    drop(f);
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(step("fsync directory"))?;
    let mut back = Vec::with_capacity(payload.len());
    fs::File::open(&file)
        .and_then(|mut f| f.read_to_end(&mut back))
        .map_err(step("read back"))?;
    if back != payload {
        return Err(format!(
            "read back: {} bytes differ from the {} written",
            back.len(),
            payload.len()
        ));
    }
    fs::remove_file(&file).map_err(step("remove file"))?;
    fs::remove_dir(dir).map_err(step("remove directory"))?;
    Ok(())
}

/// Removes expired throwaway directories under `root`; returns how many.
pub fn sweep(root: &Path, now_unix: i64) -> Result<u32, String> {
    let entries = fs::read_dir(root).map_err(|e| format!("listing {}: {e}", root.display()))?;
    let mut reaped = 0;
    let mut first_error = None;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(expiry) = name.to_str().and_then(expiry_of) else {
            continue;
        };
        if expiry > now_unix {
            continue;
        }
        match fs::remove_dir_all(entry.path()) {
            Ok(()) => reaped += 1,
            Err(e) => {
                first_error.get_or_insert(format!("removing {}: {e}", entry.path().display()));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(reaped),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Temporary directories are no mount points: these tests check the rest.
    const ANY: StorageRule = StorageRule {
        must_be_mountpoint: false,
        fs_type: None,
    };

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "lifeguard-prober-test-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir is writable");
        dir
    }

    #[test]
    fn names_carry_their_expiry_and_only_ours_parse() {
        let name = dir_name(1_700_000_000, 0xabc);
        assert_eq!(name, ".lifeguard-probe-1700000000-0000000000000abc");
        assert_eq!(expiry_of(&name), Some(1_700_000_000));
        for other in [
            "workspace-a",
            ".lifeguard-probe-",
            ".lifeguard-probe-12",
            ".lifeguard-probe-x-00ff",
            ".lifeguard-probe-12-",
            ".lifeguard-probe-12-zz",
            "lifeguard-probe-12-00ff",
        ] {
            assert_eq!(expiry_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_run_leaves_nothing_behind() {
        let root = scratch("clean");
        let run = run(&root, &ANY, 60, 1_000, 7);
        assert_eq!(run.result, Ok(()));
        assert_eq!(fs::read_dir(&root).expect("listable").count(), 0);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn the_janitor_removes_expired_leftovers_only() {
        let root = scratch("janitor");
        let expired = root.join(dir_name(999, 1));
        fs::create_dir(&expired).expect("mkdir");
        fs::write(expired.join(FILE_NAME), b"half-written").expect("write");
        let live = root.join(dir_name(2_000, 2));
        fs::create_dir(&live).expect("mkdir");
        let workspace = root.join("alice");
        fs::create_dir(&workspace).expect("mkdir");

        let run = run(&root, &ANY, 60, 1_000, 3);
        assert_eq!(run.result, Ok(()));
        assert_eq!((run.reaped, run.sweep_error), (1, None));
        assert!(!expired.exists());
        assert!(
            live.exists(),
            "not expired yet: another check may be using it"
        );
        assert!(workspace.exists(), "never touches what is not ours");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn missing_storage_is_a_failure_naming_the_step() {
        let root = scratch("missing").join("gone");
        let run = run(&root, &ANY, 60, 1_000, 3);
        let error = run.result.expect_err("no storage, no check");
        assert!(error.starts_with("create directory: "), "{error}");
        assert!(run.sweep_error.is_some());
    }

    #[test]
    fn storage_that_is_not_a_mount_point_fails_and_is_not_written() {
        let root = scratch("not-mounted");
        let expired = root.join(dir_name(999, 1));
        fs::create_dir(&expired).expect("mkdir");
        let rule = StorageRule {
            must_be_mountpoint: true,
            fs_type: None,
        };
        let run = run(&root, &rule, 60, 1_000, 3);
        let error = run
            .result
            .expect_err("a directory of /tmp is no mount point");
        let canonical = fs::canonicalize(&root).expect("exists");
        assert!(
            error.starts_with(&format!(
                "workspace storage {} is not a mount point",
                canonical.display()
            )),
            "{error}"
        );
        assert_eq!(
            fs::read_dir(&root).expect("listable").count(),
            1,
            "neither the janitor nor the check touched it"
        );
        let _ = fs::remove_dir_all(&root);
    }
}
