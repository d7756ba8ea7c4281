//! Is the workspace storage the filesystem it should be? Pure, over `/proc/self/mountinfo`.
//!
//! A hostPath whose disk is not mounted (yet) is a plain directory on the node's root
//! filesystem: writing there passes every check and proves nothing. Comparing `st_dev` of
//! the path and its parent cannot tell inside a container, where the hostPath is always a
//! bind mount; mountinfo can: its `root` field is the directory of the source filesystem
//! that is mounted, `/` when the path is the root of a filesystem (the disk), anything
//! else when the path is only a directory of another one.

use std::path::{Path, PathBuf};

/// One line of mountinfo (proc(5)), the fields the check needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub id: u64,
    pub parent: u64,
    /// The directory of the source filesystem that appears at `mount_point`.
    pub root: String,
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub source: String,
}

/// Octal escapes of mountinfo (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`:
/// six fixed fields, optional fields up to `-`, then type, source, super options.
pub fn parse_line(line: &str) -> Option<Mount> {
    let mut fields = line.split_whitespace();
    let id = fields.next()?.parse().ok()?;
    let parent = fields.next()?.parse().ok()?;
    let _device = fields.next()?;
    let root = unescape(fields.next()?);
    let mount_point = PathBuf::from(unescape(fields.next()?));
    let _options = fields.next()?;
    fields.by_ref().find(|f| *f == "-")?;
    let fs_type = fields.next()?.to_string();
    let source = unescape(fields.next().unwrap_or("none"));
    Some(Mount {
        id,
        parent,
        root,
        mount_point,
        fs_type,
        source,
    })
}

pub fn parse(mountinfo: &str) -> Vec<Mount> {
    mountinfo.lines().filter_map(parse_line).collect()
}

/// The visible mount among several stacked on one mount point: the one no other of them
/// is mounted on (the latest listed if that does not settle it).
fn top<'a>(stack: &[&'a Mount]) -> Option<&'a Mount> {
    stack
        .iter()
        .rev()
        .find(|m| !stack.iter().any(|other| other.parent == m.id))
        .or(stack.last())
        .copied()
}

/// The mount whose filesystem `path` is on: the visible one at the longest mount point
/// that is `path` or one of its ancestors.
pub fn covering<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    let deepest = mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .map(|m| m.mount_point.components().count())
        .max()?;
    let stack: Vec<&Mount> = mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .filter(|m| m.mount_point.components().count() == deepest)
        .collect();
    top(&stack)
}

/// What the storage must be (`--storage-must-be-mountpoint`, `--storage-fs-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageRule {
    pub must_be_mountpoint: bool,
    pub fs_type: Option<String>,
}

impl StorageRule {
    pub fn checks_anything(&self) -> bool {
        self.must_be_mountpoint || self.fs_type.is_some()
    }
}

/// Ok when `path` is what `rule` asks for; otherwise the failure, in words an operator
/// acts on.
pub fn verify(mounts: &[Mount], path: &Path, rule: &StorageRule) -> Result<(), String> {
    if !rule.checks_anything() {
        return Ok(());
    }
    let shown = path.display();
    let Some(mount) = covering(mounts, path) else {
        return Err(format!(
            "workspace storage {shown}: no filesystem found for it in /proc/self/mountinfo"
        ));
    };
    if rule.must_be_mountpoint {
        if mount.mount_point != path {
            return Err(format!(
                "workspace storage {shown} is not a mount point: it is a directory of the \
                 {} filesystem at {} ({}); is the workspace disk mounted?",
                mount.fs_type,
                mount.mount_point.display(),
                mount.source
            ));
        }
        if mount.root != "/" {
            return Err(format!(
                "workspace storage {shown} is not a mount point: it is the directory {} of \
                 the {} filesystem on {}, not the root of a filesystem; is the workspace \
                 disk mounted on the node?",
                mount.root, mount.fs_type, mount.source
            ));
        }
    }
    match &rule.fs_type {
        Some(want) if *want != mount.fs_type => Err(format!(
            "workspace storage {shown} is on {} ({}), not {want}",
            mount.fs_type, mount.source
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "mounts_tests.rs"]
mod tests;
