//! The WebRTC flags `host`, `relay`, `join` and `swarm` share (each also
//! a `CAMPFIRE_` variable).

use std::time::Duration;

use anyhow::bail;
use clap::Args;

use crate::transport::webrtc::WebRtcOptions;

/// Where the one UDP socket binds and what address it advertises.
#[derive(Args, Debug, Clone)]
pub struct IceArgs {
    /// Address the UDP socket binds (its host candidate, unless
    /// --public-ip says otherwise).
    #[arg(long, env = "CAMPFIRE_BIND_IP", default_value = "127.0.0.1")]
    pub bind_ip: std::net::IpAddr,
    /// UDP port of the socket every connection shares (0: any free port).
    #[arg(long, env = "CAMPFIRE_UDP_PORT", default_value_t = 0)]
    pub udp_port: u16,
    /// Address advertised instead of --bind-ip (1:1 NAT, a node's public
    /// address in front of a container). Needed with a wildcard --bind-ip.
    #[arg(long, env = "CAMPFIRE_PUBLIC_IP")]
    pub public_ip: Option<std::net::IpAddr>,
    /// Port advertised instead of the bound one (a published or mapped
    /// port).
    #[arg(long, env = "CAMPFIRE_PUBLIC_PORT")]
    pub public_port: Option<u16>,
    /// Seconds the WebRTC connection may take to open.
    #[arg(long, env = "CAMPFIRE_CONNECT_TIMEOUT", default_value_t = 20)]
    pub connect_timeout: u64,
}

impl IceArgs {
    /// The transport options these flags describe.
    pub fn webrtc_options(&self) -> anyhow::Result<WebRtcOptions> {
        if self.bind_ip.is_unspecified() && self.public_ip.is_none() {
            bail!(
                "--bind-ip {} needs --public-ip: the address peers are told must be a concrete one",
                self.bind_ip
            );
        }
        if self.public_port == Some(0) {
            bail!("--public-port must be a port (1-65535)");
        }
        Ok(WebRtcOptions {
            bind_ip: self.bind_ip,
            udp_port: self.udp_port,
            public_ip: self.public_ip,
            public_port: self.public_port,
            connect_timeout: Duration::from_secs(self.connect_timeout),
            ..WebRtcOptions::default()
        })
    }
}
