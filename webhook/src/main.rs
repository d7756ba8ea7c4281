use clap::Parser;
use lifeguard_webhook::flags::Config;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let config = Config::parse();
    lifeguard_runtime::init_tracing(config.log_format);
    lifeguard_runtime::exit_code(lifeguard_webhook::run(config).await)
}
