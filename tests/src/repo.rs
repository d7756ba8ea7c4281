//! Running the repository's own scripts from a test, as a user at a terminal would.

use std::path::PathBuf;
use std::process::Command;

/// The repository's top directory.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Variables cargo sets for the test process it runs (and for build scripts), named one by
/// one; `CARGO_PKG_*` and `CARGO_CFG_*` go by prefix.
const SET_BY_CARGO: &[&str] = &[
    "CARGO",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

fn set_by_cargo(name: &str) -> bool {
    SET_BY_CARGO.contains(&name) || name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_CFG_")
}

/// A command for the script at `path` (relative to the repository), run there, without the
/// variables cargo set for this test (`without_cargo_variables`).
pub fn repo_script(path: &str) -> Command {
    let mut command = Command::new(repo().join(path));
    command.current_dir(repo());
    without_cargo_variables(&mut command);
    command
}

/// Leaves out of `command`'s environment what cargo set for this test. A script that builds
/// with cargo (`./local-up`) would otherwise hand them on: ring's build script reruns when
/// `CARGO_MANIFEST_DIR` or `CARGO_PKG_NAME` changes, so the release build of everything
/// above ring (kube, rustls, every lifeguard crate) ran again, twice (in the test, and in
/// the next plain `./local-up`).
pub fn without_cargo_variables(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo) {
            command.env_remove(name);
        }
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_cargo_sets_is_left_out() {
        let cases = [
            ("CARGO_MANIFEST_DIR", true),
            ("CARGO_PKG_NAME", true),
            ("CARGO_PKG_VERSION_MAJOR", true),
            ("CARGO_CFG_TARGET_OS", true),
            ("OUT_DIR", true),
            ("CARGO", true),
            // What the user chose stays: the shared target directory, cargo's home.
            ("CARGO_TARGET_DIR", false),
            ("CARGO_HOME", false),
            ("CARGO_TERM_COLOR", false),
            ("KUBECONFIG", false),
            ("PATH", false),
        ];
        for (name, want) in cases {
            assert_eq!(set_by_cargo(name), want, "{name}");
        }
    }

    #[test]
    fn a_child_does_not_see_the_variables_cargo_set_for_this_test() -> std::io::Result<()> {
        // cargo test set it for this process; the child must not get it.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let mut env = Command::new("env");
        let out = without_cargo_variables(&mut env).output()?;
        let env = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success());
        assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
        for gone in ["CARGO_MANIFEST_DIR=", "CARGO_PKG_NAME=", "CARGO="] {
            assert!(!env.lines().any(|l| l.starts_with(gone)), "{gone} in {env}");
        }
        Ok(())
    }
}
