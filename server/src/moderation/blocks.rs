//! The blocks in force, in memory: what every create, update and answer is
//! checked against. The store holds them; this list is reloaded after
//! every change this replica makes and every change another replica
//! announces, so a check costs no database read.

use std::net::IpAddr;
use std::sync::RwLock;

use ipnet::IpNet;

use crate::clock::Millis;
use crate::store::moderation::BlockRow;

/// Parses a block's prefix: an address (a /32 or /128) or a CIDR prefix,
/// host bits cleared; an IPv4-mapped IPv6 address is its IPv4 address.
pub fn parse_prefix(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    let net = match text.parse::<IpNet>() {
        Ok(net) => net,
        Err(_) => match text.parse::<IpAddr>() {
            Ok(addr) => IpNet::from(addr.to_canonical()),
            Err(_) => return Err(format!("{text:?} is not an address or a CIDR prefix")),
        },
    };
    Ok(net.trunc())
}

/// One block as checked.
#[derive(Clone, Copy, Debug)]
struct Rule {
    net: IpNet,
    lapses_at: Millis,
}

/// The blocks in force.
#[derive(Debug, Default)]
pub struct Blocklist {
    rules: RwLock<Vec<Rule>>,
}

impl Blocklist {
    /// Replaces the list with `rows` (a row whose prefix does not parse,
    /// from a hand-edited database, is skipped with a warning).
    pub fn replace(&self, rows: &[BlockRow]) {
        let rules: Vec<Rule> = rows
            .iter()
            .filter_map(|row| match parse_prefix(&row.prefix) {
                Ok(net) => Some(Rule {
                    net,
                    lapses_at: row.lapses_at,
                }),
                Err(why) => {
                    tracing::warn!(id = row.id, %why, "skipping an unreadable block");
                    None
                }
            })
            .collect();
        *self.rules.write().unwrap_or_else(|p| p.into_inner()) = rules;
    }

    /// When the last block covering `ip` at `now` lapses, if one does.
    pub fn blocked_until(&self, ip: IpAddr, now: Millis) -> Option<Millis> {
        let ip = ip.to_canonical();
        self.rules
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|r| r.lapses_at > now && r.net.contains(&ip))
            .map(|r| r.lapses_at)
            .max()
    }

    /// Blocks held (lapsed ones included until the next reload).
    pub fn len(&self) -> usize {
        self.rules.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no block is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, prefix: &str, lapses_at: Millis) -> BlockRow {
        BlockRow {
            id,
            prefix: prefix.into(),
            reason: String::new(),
            created_by: "alice".into(),
            created_at: 0,
            lapses_at,
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn prefixes_are_read_canonically() {
        let parsed = |s: &str| parse_prefix(s).map(|n| n.to_string());
        assert_eq!(parsed("203.0.113.77/24").unwrap(), "203.0.113.0/24");
        assert_eq!(parsed(" 198.51.100.7 ").unwrap(), "198.51.100.7/32");
        assert_eq!(parsed("::ffff:198.51.100.7").unwrap(), "198.51.100.7/32");
        assert_eq!(parsed("2001:db8:1:2:3::9/48").unwrap(), "2001:db8:1::/48");
        assert_eq!(parsed("2001:db8::1").unwrap(), "2001:db8::1/128");
        for junk in ["", "example.org", "10.0.0.0/33", "1.2.3", "::/129"] {
            assert!(parse_prefix(junk).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn an_address_is_blocked_while_a_covering_block_lasts() {
        let list = Blocklist::default();
        list.replace(&[
            row(1, "203.0.113.0/24", 1_000),
            row(2, "203.0.113.9/32", 5_000),
            row(3, "2001:db8:1200::/40", 2_000),
            row(4, "not a prefix", 9_000),
        ]);
        assert_eq!(list.len(), 3);
        assert_eq!(list.blocked_until(ip("203.0.113.1"), 0), Some(1_000));
        assert_eq!(list.blocked_until(ip("203.0.113.9"), 0), Some(5_000));
        assert_eq!(list.blocked_until(ip("203.0.113.9"), 1_000), Some(5_000));
        assert_eq!(list.blocked_until(ip("203.0.113.1"), 1_000), None, "lapsed");
        assert_eq!(list.blocked_until(ip("203.0.114.1"), 0), None);
        assert_eq!(list.blocked_until(ip("::ffff:203.0.113.1"), 0), Some(1_000));
        assert_eq!(list.blocked_until(ip("2001:db8:12ff::1"), 0), Some(2_000));
        assert_eq!(list.blocked_until(ip("2001:db8:1300::1"), 0), None);
        list.replace(&[]);
        assert_eq!(list.blocked_until(ip("203.0.113.9"), 0), None);
    }
}
