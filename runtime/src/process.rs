//! Process plumbing the lifeguard binaries share: log format, tracing set-up, shutdown
//! signals, the exit code, and Kubernetes-style duration flags.

use std::time::Duration;

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Structured logs to stderr; `RUST_LOG` filters (default `info`). Colours only on a
/// terminal: escape codes in a log file make it unreadable and ungreppable.
pub fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// Resolves on SIGTERM (what the kubelet sends) or Ctrl-C.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = interrupt => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = interrupt.await;
        }
    }
    tracing::info!("shutting down");
}

/// The exit code for what `run` returned; an error is logged (for the log collector) and
/// printed plainly (for `kubectl logs --previous` on a crash loop) first.
pub fn exit_code(outcome: anyhow::Result<()>) -> std::process::ExitCode {
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Durations as Kubernetes users write them: `500ms`, `10s`, `1m30s`; never negative.
pub fn parse_duration(text: &str) -> Result<jiff::SignedDuration, String> {
    let d: jiff::SignedDuration = text
        .parse()
        .map_err(|e| format!("{text:?} is not a duration like 10s or 1m30s: {e}"))?;
    if d.is_negative() {
        return Err(format!("{text:?} must not be negative"));
    }
    Ok(d)
}

/// Like `parse_duration`, for intervals that must be longer than zero.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(format!("{text:?} must be longer than zero"));
    }
    Duration::try_from(d).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubernetes_ones() {
        assert_eq!(parse_interval("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_interval("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_interval("0s").is_err());
        assert_eq!(parse_duration("0s"), Ok(jiff::SignedDuration::ZERO));
        assert!(parse_duration("-5s").is_err());
        assert!(parse_duration("soon").unwrap_err().contains("soon"));
    }
}
