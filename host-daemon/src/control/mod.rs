//! The daemon's control API for testers (`--control-listen ADDR`): list
//! its sessions live, open one now, end one, fetch a finished one's report
//! and replay files; and the dashboard page that shows the same, served
//! on the same address. `host-daemon ctl` is its command-line client.
//!
//! # Layout
//!
//! - [`view`]: the API's wire types (a session as testers see it, what
//!   an order may set).
//! - [`hub`]: [`hub::ControlHub`], the registry the serving loop files its
//!   sessions in and the API reads, and the queue of open orders.
//! - [`api`]: the axum routes, the OpenAPI document and the dashboard's
//!   files (`dashboard.html`, `dashboard.js`, embedded).
//! - [`token`]: the control token a non-loopback address needs.

pub mod api;
pub mod hub;
pub mod token;
pub mod view;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::sync::Semaphore;

use api::{ControlState, MAX_EVENT_STREAMS};
use hub::ControlHub;
use token::ControlToken;
use view::DaemonInfo;

/// Binds the control API at `addr` and serves it in the background until
/// `shutdown` turns true; logs the bound address on stderr (and returns
/// it). A non-loopback address needs a token.
pub async fn serve(
    addr: SocketAddr,
    token: Option<ControlToken>,
    hub: ControlHub,
    info: DaemonInfo,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<SocketAddr> {
    if !addr.ip().is_loopback() && token.is_none() {
        anyhow::bail!("--control-listen {addr} is beyond loopback: give --control-token-file too");
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("--control-listen {addr}"))?;
    let bound = listener.local_addr().context("--control-listen")?;
    eprintln!("host-daemon: control API and dashboard on http://{bound}/");
    let app = api::router(ControlState {
        hub,
        token: token.map(Arc::new),
        info: Arc::new(info),
        streams: Arc::new(Semaphore::new(MAX_EVENT_STREAMS)),
    });
    tokio::spawn(async move {
        let stopped = async move {
            let _ = shutdown.wait_for(|s| *s).await;
        };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(stopped)
            .await
        {
            eprintln!("host-daemon: control API stopped: {e}");
        }
    });
    Ok(bound)
}
