//! The same program under the name kubectl looks for: with `kubectl-lifeguard` on PATH,
//! `kubectl lifeguard ...` runs it (a kubectl plugin), and help says `kubectl lifeguard`.

fn main() -> std::process::ExitCode {
    lifeguard_cli::main()
}
