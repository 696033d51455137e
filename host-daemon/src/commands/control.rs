//! The control API's flags, shared by `host` and `relay`, and starting it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use tokio::sync::watch;

use crate::control::hub::ControlHub;
use crate::control::token::ControlToken;
use crate::control::view::{DaemonInfo, SessionKind};
use crate::serving::{ControlDesk, ServingConfig};

/// `--control-listen` and its companions.
#[derive(Args, Debug, Clone)]
pub struct ControlArgs {
    /// Serve the testers' control API and dashboard at ADDR (a port alone
    /// means 127.0.0.1:PORT; port 0 picks one). An address beyond loopback
    /// needs --control-token-file.
    #[arg(long, value_name = "ADDR", env = "CAMPFIRE_CONTROL_LISTEN", value_parser = parse_listen)]
    pub control_listen: Option<SocketAddr>,
    /// A file whose first line is the token every control API call must
    /// present (`Authorization: Bearer`); at least 16 characters.
    #[arg(long, value_name = "FILE", env = "CAMPFIRE_CONTROL_TOKEN_FILE")]
    pub control_token_file: Option<PathBuf>,
    /// Sessions testers may have running at once through the control API.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 8,
        env = "CAMPFIRE_CONTROL_MAX_SESSIONS"
    )]
    pub control_max_sessions: usize,
}

/// `ADDR` as `IP:PORT`, or a port alone on loopback.
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse()
        .map_err(|_| format!("{text:?} is neither IP:PORT nor a port"))
}

impl ControlArgs {
    /// Starts the control API if asked: the desk the serving loop takes.
    pub async fn start(
        &self,
        config: &ServingConfig,
        shutdown: watch::Receiver<bool>,
    ) -> anyhow::Result<Option<ControlDesk>> {
        let Some(addr) = self.control_listen else {
            if self.control_token_file.is_some() {
                anyhow::bail!("--control-token-file needs --control-listen");
            }
            return Ok(None);
        };
        let token = match &self.control_token_file {
            Some(path) => Some(ControlToken::load(path)?),
            None => None,
        };
        let (hub, orders) = ControlHub::new(config.record_dir.clone());
        let info = DaemonInfo {
            kind: if config.relay.is_some() {
                SessionKind::Relay
            } else {
                SessionKind::Host
            },
            lobby: config.server.clone(),
            recording: config.record_dir.is_some(),
            standing_sessions: config.sessions,
            max_control_sessions: self.control_max_sessions,
        };
        crate::control::serve(addr, token, hub.clone(), info, shutdown).await?;
        Ok(Some(ControlDesk {
            hub,
            orders,
            max_sessions: self.control_max_sessions,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_listens_on_loopback() {
        assert_eq!(parse_listen("7070").unwrap().to_string(), "127.0.0.1:7070");
        assert_eq!(parse_listen("[::1]:0").unwrap().to_string(), "[::1]:0");
        assert!(parse_listen("localhost").is_err());
    }
}
