use clap::Parser;
use lifeguard_prober::flags::Config;

// One thread is plenty: checks wait on the network or on their own I/O threads, and the
// liveness endpoint only reads an atomic. It keeps the sidecar's footprint small.
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let config = Config::parse();
    lifeguard_runtime::init_tracing(config.log_format);
    lifeguard_runtime::exit_code(lifeguard_prober::run(config).await)
}
