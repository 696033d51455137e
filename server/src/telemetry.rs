//! Log output: tracing-subscriber, `RUST_LOG` honoured, pretty or JSON lines.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// The filter used when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "info,sqlx=warn";

/// Installs the global subscriber (a second call is a no-op).
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stdout);
    let _ = match format {
        LogFormat::Pretty => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
