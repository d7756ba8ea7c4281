fn main() -> std::process::ExitCode {
    lifeguard_cli::main()
}
