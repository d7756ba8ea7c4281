use clap::Parser;
use lifeguard_webhook::cli::Config;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let config = Config::parse();
    lifeguard_webhook::init_tracing(config.log_format);
    match lifeguard_webhook::run(config).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
