//! The WebRTC flags `host` and `join` share.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use protocol::api::IceServer;

use crate::transport::webrtc::WebRtcOptions;

/// Where WebRTC binds and which ICE servers it uses.
#[derive(Args, Debug, Clone)]
pub struct IceArgs {
    /// Address the UDP sockets bind (the only host candidate).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_ip: std::net::IpAddr,
    /// UDP port range A-B (one port per connection).
    #[arg(long, value_name = "A-B")]
    pub udp_ports: Option<String>,
    /// Address advertised instead of --bind-ip (1:1 NAT).
    #[arg(long)]
    pub public_ip: Option<std::net::IpAddr>,
    /// STUN server URL (stun:host:port), repeatable.
    #[arg(long)]
    pub stun: Vec<String>,
    /// TURN server as URL,USERNAME,CREDENTIAL, repeatable.
    #[arg(long)]
    pub turn: Vec<String>,
    /// Seconds the WebRTC connection may take to open.
    #[arg(long, default_value_t = 20)]
    pub connect_timeout: u64,
}

impl IceArgs {
    /// The transport options these flags describe.
    pub fn webrtc_options(&self) -> anyhow::Result<WebRtcOptions> {
        webrtc_options(self)
    }
}

fn webrtc_options(a: &IceArgs) -> anyhow::Result<WebRtcOptions> {
    let udp_ports = match &a.udp_ports {
        None => None,
        Some(r) => {
            let (lo, hi) = r.split_once('-').context("--udp-ports takes A-B")?;
            let lo: u16 = lo.trim().parse().context("--udp-ports: A must be a port")?;
            let hi: u16 = hi.trim().parse().context("--udp-ports: B must be a port")?;
            if lo == 0 || lo > hi {
                bail!("--udp-ports: need 0 < A <= B");
            }
            Some(lo..=hi)
        }
    };
    let mut ice_servers: Vec<IceServer> = a
        .stun
        .iter()
        .map(|u| IceServer {
            urls: vec![u.clone()],
            username: None,
            credential: None,
        })
        .collect();
    for t in &a.turn {
        let mut parts = t.splitn(3, ',');
        let url = parts.next().unwrap_or_default().to_owned();
        ice_servers.push(IceServer {
            urls: vec![url],
            username: parts.next().map(str::to_owned),
            credential: parts.next().map(str::to_owned),
        });
    }
    Ok(WebRtcOptions {
        bind_ip: a.bind_ip,
        udp_ports,
        public_ip: a.public_ip,
        ice_servers,
        connect_timeout: Duration::from_secs(a.connect_timeout),
        ..WebRtcOptions::default()
    })
}
