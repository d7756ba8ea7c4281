//! Running the shell blocks of `docs/operations.md` exactly as written, so a test fails
//! when the documented commands stop working.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::{repo, unique_name, without_cargo_variables};

/// The first ```sh block after the line `heading` (e.g. "### Uninstall") in
/// docs/operations.md.
pub fn documented_block(heading: &str) -> anyhow::Result<String> {
    let doc = std::fs::read_to_string(repo().join("docs/operations.md"))?;
    let section = doc
        .split(&format!("\n{heading}\n"))
        .nth(1)
        .with_context(|| format!("docs/operations.md has no section {heading:?}"))?;
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .with_context(|| format!("the section {heading:?} has no sh block"))?;
    Ok(block.to_string())
}

/// A directory whose `lifeguard` is the CLI built with the test crate (`cli` is its
/// `CARGO_BIN_EXE_lifeguard-cli`).
fn cli_on_path(cli: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(unique_name("lifeguard-cli"));
    std::fs::create_dir_all(&dir)?;
    let link = dir.join("lifeguard");
    if !link.exists() {
        std::os::unix::fs::symlink(cli, &link)?;
    }
    Ok(dir)
}

/// Runs `script` with bash -euo pipefail in the repository, with `env` set and the CLI `cli`
/// first on PATH as `lifeguard`; fails with its output unless it succeeds.
pub fn run_documented(script: &str, env: &[(&str, &str)], cli: &str) -> anyhow::Result<()> {
    let path = format!(
        "{}:{}",
        cli_on_path(cli)?.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = without_cargo_variables(&mut Command::new("bash"))
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(repo())
        .env("PATH", path)
        .envs(env.iter().copied())
        .output()
        .context("running bash")?;
    if !out.status.success() {
        bail!(
            "the documented commands failed ({}):\n{script}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The disruptive tests run these blocks; a heading renamed or a block moved must fail
    /// here, quickly, not after a cluster was torn down.
    #[test]
    fn the_blocks_the_removal_tests_run_are_where_they_look() -> anyhow::Result<()> {
        let kustomize = documented_block("### Uninstall")?;
        assert!(
            kustomize.contains("kubectl delete -k \"$KUSTOMIZATION\""),
            "{kustomize}"
        );
        assert!(kustomize.contains("lifeguard nodes clean"), "{kustomize}");
        let helm = documented_block("### Removing a Helm install")?;
        assert!(helm.contains("helm uninstall lifeguard"), "{helm}");
        assert!(!helm.contains("kubectl delete -k"), "{helm}");
        assert!(documented_block("### No such section").is_err());
        Ok(())
    }
}
