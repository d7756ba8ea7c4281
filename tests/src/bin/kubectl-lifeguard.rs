//! The CLI under its kubectl-plugin name, so that `tests/cli.rs` can put it on PATH and
//! run it through `kubectl lifeguard` (`CARGO_BIN_EXE_kubectl-lifeguard`).

fn main() -> std::process::ExitCode {
    lifeguard_cli::main()
}
