//! `lifeguard`, the command-line tool: schedule maintenance windows, watch drains, list
//! workspaces. Pure modules decide and render; `commands` does the I/O.

pub mod cluster;
mod commands;
pub mod drain;
pub mod error;
pub mod flags;
pub mod manifest;
pub mod nodes;
pub mod output;
pub mod scope;
pub mod skip;
pub mod stop;
pub mod when;
pub mod windows;
pub mod workspaces;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

pub use commands::run;
pub use error::{Error, exit};

/// How help and errors name the program: kubectl runs a plugin found on PATH as
/// `kubectl-lifeguard`, and its user typed `kubectl lifeguard`.
pub fn bin_name(argv0: Option<&std::ffi::OsStr>) -> &'static str {
    let invoked_as = argv0
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .and_then(std::ffi::OsStr::to_str)
        .unwrap_or_default();
    if invoked_as.starts_with("kubectl-") {
        "kubectl lifeguard"
    } else {
        "lifeguard"
    }
}

/// The whole program; `main.rs` only calls this.
pub fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let bin_name = bin_name(args.next().as_deref());
    let parsed = flags::Cli::command()
        .bin_name(bin_name)
        .try_get_matches_from(std::iter::once(bin_name.into()).chain(args))
        .and_then(|matches| flags::Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // Help and --version land here too, with exit code 0.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(exit::USAGE));
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    #[test]
    fn the_name_it_was_invoked_by() {
        for (argv0, expected) in [
            (
                Some("/usr/local/bin/kubectl-lifeguard"),
                "kubectl lifeguard",
            ),
            (Some("kubectl-lifeguard"), "kubectl lifeguard"),
            (Some("/usr/local/bin/lifeguard"), "lifeguard"),
            (Some("lifeguard-cli"), "lifeguard"),
            (None, "lifeguard"),
        ] {
            assert_eq!(
                super::bin_name(argv0.map(OsStr::new)),
                expected,
                "{argv0:?}"
            );
        }
    }
}
