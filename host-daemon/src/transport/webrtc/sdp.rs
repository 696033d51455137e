//! SDP address rewriting for a host behind a 1:1 NAT.

use std::net::IpAddr;

/// Rewrites the advertised address `from` to `to` in an SDP: the
/// connection address of every `a=candidate` line and the `c=` lines. Used
/// behind a 1:1 NAT, where the socket is bound to a private address but
/// peers must dial the public one (the crate's own NAT 1:1 setting is
/// stored but not applied in 0.21.1). With `from` unspecified (a wildcard
/// bind, as in a container whose own address is not known in advance),
/// every host candidate and every `c=` address is rewritten.
pub fn rewrite_sdp_address(sdp: &str, from: IpAddr, to: IpAddr) -> String {
    let (from_s, to_s) = (from.to_string(), to.to_string());
    let any = from.is_unspecified();
    let family = if to.is_ipv4() { "IP4" } else { "IP6" };
    let mut out = String::with_capacity(sdp.len() + 16);
    for line in sdp.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        let ending = &line[body.len()..];
        if body.starts_with("a=candidate:") {
            let mut fields: Vec<&str> = body.split(' ').collect();
            let host = fields.get(7) == Some(&"host");
            if fields.get(4) == Some(&from_s.as_str()) || (any && host) {
                fields[4] = &to_s;
            }
            out.push_str(&fields.join(" "));
        } else if let Some(rest) = body.strip_prefix("c=IN ") {
            match rest.split_once(' ') {
                Some((_, addr)) if addr == from_s || any => {
                    out.push_str(&format!("c=IN {family} {to_s}"));
                }
                _ => out.push_str(body),
            }
        } else {
            out.push_str(body);
        }
        out.push_str(ending);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_candidates_and_connection_lines_only_for_the_bind_address() {
        let sdp = "v=0\r\nc=IN IP4 10.0.0.5\r\n\
            a=candidate:1 1 udp 2130706431 10.0.0.5 50000 typ host\r\n\
            a=candidate:2 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 10.0.0.5 rport 50000\r\n\
            a=sctp-port:5000\r\n";
        let out = rewrite_sdp_address(
            sdp,
            "10.0.0.5".parse().unwrap(),
            "203.0.113.7".parse().unwrap(),
        );
        assert_eq!(
            out,
            "v=0\r\nc=IN IP4 203.0.113.7\r\n\
            a=candidate:1 1 udp 2130706431 203.0.113.7 50000 typ host\r\n\
            a=candidate:2 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 10.0.0.5 rport 50000\r\n\
            a=sctp-port:5000\r\n"
        );
    }

    #[test]
    fn a_wildcard_bind_rewrites_every_host_candidate() {
        let sdp = "c=IN IP4 172.18.0.4\r\n\
            a=candidate:1 1 udp 2130706431 172.18.0.4 40000 typ host\r\n\
            a=candidate:2 1 udp 2130706431 10.1.0.9 40000 typ host\r\n\
            a=candidate:3 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 172.18.0.4 rport 40000\r\n";
        let out = rewrite_sdp_address(
            sdp,
            "0.0.0.0".parse().unwrap(),
            "203.0.113.7".parse().unwrap(),
        );
        assert_eq!(
            out,
            "c=IN IP4 203.0.113.7\r\n\
            a=candidate:1 1 udp 2130706431 203.0.113.7 40000 typ host\r\n\
            a=candidate:2 1 udp 2130706431 203.0.113.7 40000 typ host\r\n\
            a=candidate:3 1 udp 1694498815 9.9.9.9 50001 typ srflx raddr 172.18.0.4 rport 40000\r\n"
        );
    }
}
