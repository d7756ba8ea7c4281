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
pub mod stop;
pub mod when;
pub mod windows;
pub mod workspaces;

use std::process::ExitCode;

use clap::Parser;

pub use commands::run;
pub use error::{Error, exit};

/// The whole program; `main.rs` only calls this.
pub fn main() -> ExitCode {
    let cli = match flags::Cli::try_parse() {
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
