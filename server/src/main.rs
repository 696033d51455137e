//! `lobby-server`: parse the configuration, set up logging, serve until
//! SIGTERM or ctrl-c.

use std::process::ExitCode;

use clap::Parser;
use lobby_server::{Application, Config, telemetry};

/// mimalloc instead of glibc's malloc (docs/decisions.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let config = Config::parse();
    telemetry::init(config.log_format);
    let runtime = match config.worker_threads {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n.into())
            .enable_all()
            .build(),
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(err) => {
            tracing::error!("cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    // Registered before the server starts: a SIGTERM right after the
    // "listening on" line still shuts it down cleanly.
    let stop = shutdown_signal();
    let app = Application::build(config).await?;
    app.run_until_stopped(stop).await
}

/// Listens for ctrl-c and SIGTERM from now on; the future completes on
/// either.
#[cfg(unix)]
fn shutdown_signal() -> impl Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind: SignalKind, name: &str| match signal(kind) {
        Ok(stream) => Some(stream),
        Err(err) => {
            tracing::warn!(error = %err, "cannot listen for {name}");
            None
        }
    };
    let mut interrupt = listen(SignalKind::interrupt(), "ctrl-c");
    let mut terminate = listen(SignalKind::terminate(), "SIGTERM");
    async move {
        tokio::select! {
            () = received(interrupt.as_mut()) => {}
            () = received(terminate.as_mut()) => {}
        }
    }
}

/// Completes when `stream` delivers a signal (never without a stream).
#[cfg(unix)]
async fn received(stream: Option<&mut tokio::signal::unix::Signal>) {
    match stream {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Completes on ctrl-c.
#[cfg(not(unix))]
fn shutdown_signal() -> impl Future<Output = ()> {
    async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %err, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    }
}
