//! The `lifeguard` CLI, built as a binary of this package so that `tests/cli.rs` can run
//! the real program through `CARGO_BIN_EXE_lifeguard-cli` under `cargo test -p lifeguard-e2e`.

fn main() -> std::process::ExitCode {
    lifeguard_cli::main()
}
