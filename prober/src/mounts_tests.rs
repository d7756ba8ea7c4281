use super::*;

const ROOT: &str = "1200 1100 0:52 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/l";
const PROC: &str = "1201 1200 0:55 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw";
/// The hostPath bound before the disk was mounted: a directory of the node's root disk.
const BARE: &str =
    "1210 1200 8:1 /var/lib/workspaces /workspace-storage rw,relatime master:1 - ext4 /dev/sda1 rw";
/// The hostPath bound after the disk was mounted: the root of the disk.
const DISK: &str =
    "1210 1200 8:17 / /workspace-storage rw,relatime master:40 - xfs /dev/sdb rw,attr2";
/// The disk mounted later on the node, propagated (HostToContainer) on top of BARE.
const LATER: &str =
    "1250 1210 8:17 / /workspace-storage rw,relatime master:40 - xfs /dev/sdb rw,attr2";

fn mounts(lines: &[&str]) -> Vec<Mount> {
    parse(&lines.join("\n"))
}

fn rule(must_be_mountpoint: bool, fs_type: Option<&str>) -> StorageRule {
    StorageRule {
        must_be_mountpoint,
        fs_type: fs_type.map(str::to_string),
    }
}

#[test]
fn mountinfo_lines_parse_with_optional_fields_and_escapes() {
    let m = parse_line(BARE).expect("parses");
    assert_eq!(
        m,
        Mount {
            id: 1210,
            parent: 1200,
            root: "/var/lib/workspaces".into(),
            mount_point: "/workspace-storage".into(),
            fs_type: "ext4".into(),
            source: "/dev/sda1".into(),
        }
    );
    let no_optional = parse_line(PROC).expect("parses");
    assert_eq!(
        (no_optional.fs_type.as_str(), no_optional.id),
        ("proc", 1201)
    );
    let several =
        parse_line("7 1 8:2 / /data rw shared:2 master:9 - ext4 /dev/sdc rw").expect("parses");
    assert_eq!(several.source, "/dev/sdc");
    let escaped =
        parse_line(r"8 1 8:3 /a\040b /mnt/my\040disk\134x rw - ext4 /dev/sdd rw").expect("parses");
    assert_eq!(escaped.mount_point, PathBuf::from("/mnt/my disk\\x"));
    assert_eq!(escaped.root, "/a b");
    for broken in [
        "",
        "garbage",
        "1 2 3 / /x rw ext4 /dev/sda rw",
        "x 1 8:1 / /x rw - ext4 s o",
    ] {
        assert_eq!(parse_line(broken), None, "{broken:?}");
    }
    assert_eq!(mounts(&[ROOT, "junk", PROC]).len(), 2);
}

/// (what it shows, mountinfo lines, path, rule, Ok or the start of the failure)
type Case<'a> = (
    &'a str,
    Vec<&'a str>,
    &'a Path,
    StorageRule,
    Result<(), &'a str>,
);

#[test]
fn the_storage_must_be_the_mounted_disk() {
    let path = Path::new("/workspace-storage");
    let yes = rule(true, None);
    let cases: Vec<Case> = vec![
        (
            "the disk was mounted before the prober started",
            vec![ROOT, PROC, DISK],
            path,
            yes.clone(),
            Ok(()),
        ),
        (
            "the disk is not mounted: the hostPath is a directory of the root disk",
            vec![ROOT, PROC, BARE],
            path,
            yes.clone(),
            Err(
                "workspace storage /workspace-storage is not a mount point: it is the directory /var/lib/workspaces of the ext4 filesystem on /dev/sda1",
            ),
        ),
        (
            "the disk mounted later is seen through propagation",
            vec![ROOT, BARE, LATER],
            path,
            yes.clone(),
            Ok(()),
        ),
        (
            "the later mount is found on top whatever the order",
            vec![ROOT, LATER, BARE],
            path,
            yes.clone(),
            Ok(()),
        ),
        (
            "a host process on a plain directory",
            vec![ROOT],
            Path::new("/var/lib/workspaces"),
            yes.clone(),
            Err(
                "workspace storage /var/lib/workspaces is not a mount point: it is a directory of the overlay filesystem at /",
            ),
        ),
        (
            "a host process on the mounted disk",
            vec![
                ROOT,
                "30 1200 8:17 / /var/lib/workspaces rw - xfs /dev/sdb rw",
            ],
            Path::new("/var/lib/workspaces"),
            yes.clone(),
            Ok(()),
        ),
        (
            "a trailing slash is the same path",
            vec![ROOT, DISK],
            Path::new("/workspace-storage/"),
            yes.clone(),
            Ok(()),
        ),
        (
            "the expected filesystem type",
            vec![ROOT, DISK],
            path,
            rule(true, Some("xfs")),
            Ok(()),
        ),
        (
            "another filesystem type",
            vec![ROOT, DISK],
            path,
            rule(true, Some("ext4")),
            Err("workspace storage /workspace-storage is on xfs (/dev/sdb), not ext4"),
        ),
        (
            "the type alone, on a bind mount of a directory",
            vec![ROOT, BARE],
            path,
            rule(false, Some("ext4")),
            Ok(()),
        ),
        (
            "the type alone catches the root disk",
            vec![ROOT, BARE],
            path,
            rule(false, Some("xfs")),
            Err("workspace storage /workspace-storage is on ext4 (/dev/sda1), not xfs"),
        ),
        (
            "checking nothing accepts anything",
            vec![],
            path,
            rule(false, None),
            Ok(()),
        ),
        (
            "no mountinfo at all",
            vec![],
            path,
            yes.clone(),
            Err("workspace storage /workspace-storage: no filesystem found"),
        ),
        (
            "unmounted again: back to the bare directory",
            vec![ROOT, BARE],
            path,
            yes,
            Err("workspace storage /workspace-storage is not a mount point"),
        ),
    ];
    for (name, lines, path, rule, want) in cases {
        let got = verify(&mounts(&lines), path, &rule);
        match (want, &got) {
            (Ok(()), Ok(())) => {}
            (Err(start), Err(error)) if error.starts_with(start) => {}
            (want, got) => panic!("{name}: want {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn the_visible_mount_covers_paths_below_it() {
    let all = mounts(&[ROOT, PROC, BARE, LATER]);
    let below = covering(&all, Path::new("/workspace-storage/alice")).expect("covered");
    assert_eq!(below.id, 1250);
    let proc = covering(&all, Path::new("/proc/self")).expect("covered");
    assert_eq!(proc.fs_type, "proc");
    assert_eq!(covering(&all, Path::new("/etc")).map(|m| m.id), Some(1200));
    assert!(
        covering(&all, Path::new("/workspace-storagex")).is_some_and(|m| m.id == 1200),
        "a sibling with a common prefix is not below the mount point"
    );
}
