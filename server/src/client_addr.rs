//! Who the client is: the TCP peer, or, on a connection from a trusted
//! proxy, the address that proxy names last in `X-Forwarded-For`.
//!
//! The front door ([`crate::serve`]) and every handler ([`crate::extract::ClientIp`])
//! ask this one type, so the connection caps, rate limits, event-stream
//! caps and session caps all key on the same address. A connection from a
//! trusted proxy is not capped as one client (it carries many); each
//! forwarded client's requests in flight are capped instead.

use std::net::{IpAddr, Ipv6Addr};

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The networks the server takes `X-Forwarded-For` from, if any.
#[derive(Clone, Debug, Default)]
pub struct ForwardedFor {
    /// `None`: the header is ignored and the TCP peer is the client.
    trusted: Option<Vec<IpNet>>,
}

/// A client address as the front door determined it, in the request's
/// extensions for the handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl ForwardedFor {
    /// Ignore `X-Forwarded-For`: every peer is its own client.
    pub fn ignored() -> Self {
        Self { trusted: None }
    }

    /// Take `X-Forwarded-For` from peers inside `proxies`.
    pub fn trusting(proxies: Vec<IpNet>) -> Self {
        Self {
            trusted: Some(proxies),
        }
    }

    /// Whether `peer` is a proxy whose `X-Forwarded-For` names the client.
    pub fn is_trusted_proxy(&self, peer: IpAddr) -> bool {
        let peer = canonical(peer);
        self.trusted
            .as_ref()
            .is_some_and(|nets| nets.iter().any(|n| n.contains(&peer)))
    }

    /// The client of a request from `peer` with `headers`: the last
    /// `X-Forwarded-For` entry when `peer` is a trusted proxy and the entry
    /// is an address; otherwise `peer`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if self.is_trusted_proxy(peer)
            && let Some(ip) = last_forwarded_for(headers)
        {
            return ip;
        }
        peer
    }
}

/// An IPv4-mapped IPv6 peer as the IPv4 address it is (a dual-stack
/// listener reports IPv4 clients that way).
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// The last entry of `X-Forwarded-For` (the one the nearest proxy
/// appended), if it is an address.
fn last_forwarded_for(headers: &HeaderMap) -> Option<IpAddr> {
    let last = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .rfind(|s| !s.is_empty())?;
    last.parse().ok()
}

/// Parses a network in CIDR notation, or a single address as its own
/// network (`10.0.0.0/8`, `::1`).
pub fn parse_network(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("{s:?} is neither an address nor a network (CIDR, e.g. 10.0.0.0/8)"))
}

/// How client addresses are grouped for every per-client bound: an IPv4
/// address is its own client, an IPv6 address counts as its network of
/// `ipv6_prefix` bits (`--ipv6-prefix-len`, 56 by default: one subscriber
/// usually holds a whole /56 or /64, so keying by the full address would
/// give each of them 2^64 budgets, and by /64 still 256).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientKeys {
    ipv6_prefix: u8,
}

impl Default for ClientKeys {
    fn default() -> Self {
        Self {
            ipv6_prefix: DEFAULT_IPV6_PREFIX,
        }
    }
}

/// The IPv6 prefix length clients are grouped by unless configured.
pub const DEFAULT_IPV6_PREFIX: u8 = 56;

impl ClientKeys {
    /// IPv6 clients grouped by `prefix` bits (clamped to 16..=128).
    pub fn ipv6_prefix(prefix: u8) -> Self {
        Self {
            ipv6_prefix: prefix.clamp(16, 128),
        }
    }

    /// The key an address's budgets and caps are kept under: the IPv4
    /// address (also when it arrives IPv4-mapped), or the IPv6 network.
    pub fn key(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(_) => ip,
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let bits = u128::from(v6);
                    let mask = u128::MAX
                        .checked_shl(128 - u32::from(self.ipv6_prefix))
                        .unwrap_or(0);
                    IpAddr::V6(Ipv6Addr::from(bits & mask))
                }
            },
        }
    }

    /// [`Self::key`] as text: `203.0.113.7`, or `2001:db8:1:200::/56`.
    pub fn label(&self, ip: IpAddr) -> String {
        match self.key(ip) {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("{v6}/{}", self.ipv6_prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|s| parse_network(s).unwrap()).collect()
    }

    #[test]
    fn a_trusted_proxy_names_the_client_with_its_last_entry() {
        let f = ForwardedFor::trusting(nets(&["10.0.0.0/8"]));
        let proxy: IpAddr = "10.1.2.3".parse().unwrap();
        let h = headers(&["198.51.100.1, 203.0.113.9", "192.0.2.4"]);
        assert_eq!(f.client(proxy, &h), "192.0.2.4".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn an_untrusted_peer_is_its_own_client_whatever_it_claims() {
        let f = ForwardedFor::trusting(nets(&["10.0.0.0/8"]));
        let direct: IpAddr = "203.0.113.7".parse().unwrap();
        assert!(!f.is_trusted_proxy(direct));
        assert_eq!(f.client(direct, &headers(&["192.0.2.4"])), direct);
        let ignored = ForwardedFor::ignored();
        let proxy: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(ignored.client(proxy, &headers(&["192.0.2.4"])), proxy);
    }

    #[test]
    fn a_proxy_without_a_usable_header_is_the_client() {
        let f = ForwardedFor::trusting(nets(&["127.0.0.0/8"]));
        let proxy: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(f.client(proxy, &headers(&[])), proxy);
        assert_eq!(f.client(proxy, &headers(&["unknown"])), proxy);
    }

    #[test]
    fn an_ipv4_mapped_peer_matches_ipv4_networks() {
        let f = ForwardedFor::trusting(nets(&["127.0.0.0/8"]));
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert!(f.is_trusted_proxy(mapped));
    }

    #[test]
    fn networks_parse_as_cidr_or_single_addresses() {
        assert_eq!(parse_network("::1").unwrap().to_string(), "::1/128");
        assert_eq!(
            parse_network(" 10.0.0.0/8 ").unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert!(parse_network("10.0.0.0/33").is_err());
        assert!(parse_network("proxy").is_err());
    }

    fn addr(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    #[test]
    fn an_ipv6_network_shares_one_budget_and_ipv4_keeps_its_address() {
        let keys = ClientKeys::default();
        assert_eq!(
            keys.key(addr("2001:db8:1:2:aaaa::1")),
            addr("2001:db8:1:0::")
        );
        assert_eq!(
            keys.key(addr("2001:db8:1:ff:ffff:ffff:ffff:ffff")),
            keys.key(addr("2001:db8:1:2::7")),
            "one /56"
        );
        assert_ne!(
            keys.key(addr("2001:db8:1:100::1")),
            keys.key(addr("2001:db8:1:2::1"))
        );
        assert_eq!(keys.key(addr("::ffff:192.0.2.7")), addr("192.0.2.7"));
        assert_eq!(keys.key(addr("192.0.2.7")), addr("192.0.2.7"));
        assert_eq!(keys.label(addr("2001:db8:1:2::9")), "2001:db8:1::/56");
        let per_64 = ClientKeys::ipv6_prefix(64);
        assert_ne!(
            per_64.key(addr("2001:db8:1:3::1")),
            per_64.key(addr("2001:db8:1:2::1"))
        );
        assert_eq!(per_64.label(addr("2001:db8:1:2::9")), "2001:db8:1:2::/64");
        assert_eq!(
            ClientKeys::ipv6_prefix(128).key(addr("2001:db8::9")),
            addr("2001:db8::9")
        );
    }
}
