//! A cheap plausibility check for SDP bodies.
//!
//! The lobby server relays SDP without parsing it; this check only rejects
//! what cannot be a session description (empty strings, JSON pasted by
//! mistake, binary noise) so such mistakes fail at the joiner's POST with a
//! clear error instead of inside the host's WebRTC stack.
//!
//! The check is regular on purpose: [`SDP_PATTERN`] says the same thing as
//! a regular expression, and the server publishes it in its OpenAPI
//! document, so any string the schema allows is accepted and any other is
//! refused. Lines hold printable ASCII and tabs only (what browsers and
//! webrtc-rs emit), so a length in characters is a length in bytes.

/// What [`check_plausible_sdp`] accepts (apart from the length cap), as a
/// regular expression in the dialect common to JSON Schema (ECMA-262),
/// Python and Rust's `regex`: starts with `v=0`; lines end in LF or CRLF;
/// every non-empty line is `x=value` with `x` in `a`–`z` and the value
/// printable ASCII or tabs; at least one line after the first is an `m=`
/// line.
pub const SDP_PATTERN: &str = r"^v=0[\t\x20-\x7E]*\r?(?:\n(?:[a-z]=[\t\x20-\x7E]*)?\r?)*\nm=[\t\x20-\x7E]*\r?(?:\n(?:[a-z]=[\t\x20-\x7E]*)?\r?)*$";

/// The default cap on an offer or answer, in bytes (the server's
/// `--max-sdp-bytes`). SDP is ASCII, so this is also its length in characters.
pub const SDP_DEFAULT_MAX_BYTES: usize = 32 * 1024;

/// Why a string is not plausibly SDP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SdpError {
    /// Longer than the configured cap.
    #[error("the SDP is {len} bytes, more than the {max} allowed")]
    TooLong {
        /// Actual length in bytes.
        len: usize,
        /// The cap in bytes.
        max: usize,
    },
    /// Does not begin with the `v=0` version line.
    #[error("an SDP body must start with the line \"v=0\"")]
    NoVersionLine,
    /// Has no media (`m=`) section, so it cannot open a data channel.
    #[error("the SDP has no media section (no \"m=\" line)")]
    NoMediaSection,
    /// A line is not of the `x=value` form, or holds a character other
    /// than printable ASCII or a tab.
    #[error("SDP line {line} is not of the form \"x=value\" in printable ASCII")]
    MalformedLine {
        /// One-based line number.
        line: usize,
    },
}

/// Checks that `sdp` looks like a session description of at most
/// `max_bytes`: exactly the strings [`SDP_PATTERN`] matches, up to that length.
pub fn check_plausible_sdp(sdp: &str, max_bytes: usize) -> Result<(), SdpError> {
    if sdp.len() > max_bytes {
        return Err(SdpError::TooLong {
            len: sdp.len(),
            max: max_bytes,
        });
    }
    if !sdp.starts_with("v=0") {
        return Err(SdpError::NoVersionLine);
    }
    let mut has_media = false;
    for (i, line) in sdp.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let bytes = line.as_bytes();
        let well_formed = bytes.len() >= 2
            && bytes[0].is_ascii_lowercase()
            && bytes[1] == b'='
            && bytes
                .iter()
                .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b));
        if !well_formed {
            return Err(SdpError::MalformedLine { line: i + 1 });
        }
        has_media |= bytes[0] == b'm';
    }
    if !has_media {
        return Err(SdpError::NoMediaSection);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OFFER: &str = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n";

    #[test]
    fn accepts_a_data_channel_offer() {
        assert_eq!(check_plausible_sdp(OFFER, 65536), Ok(()));
    }

    #[test]
    fn rejects_what_is_not_sdp() {
        assert_eq!(
            check_plausible_sdp("{\"sdp\":1}", 65536),
            Err(SdpError::NoVersionLine)
        );
        assert_eq!(
            check_plausible_sdp("v=0\r\ns=-\r\n", 65536),
            Err(SdpError::NoMediaSection)
        );
        assert_eq!(
            check_plausible_sdp("v=0\r\nhello\r\nm=x\r\n", 65536),
            Err(SdpError::MalformedLine { line: 2 })
        );
        assert!(matches!(
            check_plausible_sdp(OFFER, 10),
            Err(SdpError::TooLong { .. })
        ));
    }

    #[test]
    fn lines_are_printable_ascii_or_tabs() {
        let with = |line: &str| format!("v=0\r\n{line}\r\nm=application 9 x\r\n");
        assert_eq!(check_plausible_sdp(&with("s=\tname ~"), 65536), Ok(()));
        for bad in ["s=caf\u{e9}", "s=\u{85}", "s=\u{7f}", "s=a\rb", "s=\u{0}"] {
            assert_eq!(
                check_plausible_sdp(&with(bad), 65536),
                Err(SdpError::MalformedLine { line: 2 }),
                "{bad:?}"
            );
        }
    }

    /// Near-SDP: lines of every kind, mostly well-formed, with every way a
    /// line can start, end or go wrong.
    fn near_sdp() -> impl Strategy<Value = String> {
        let start = prop_oneof![
            8 => proptest::sample::select(&["v=0", "m=", "a=", "z=", "o=", ""][..]),
            1 => proptest::sample::select(&["x", "V=", "=", "m", "{\"sdp\":1}"][..]),
        ];
        let text = prop_oneof![
            8 => "[ -~\t]{0,6}",
            1 => proptest::sample::select(&["\u{7f}", "\u{85}", "\u{e9}", "\u{0}", "\r", "\u{2028}"][..])
                .prop_map(str::to_owned),
        ];
        let end = proptest::sample::select(&["\r\n", "\n", "\r\n", "\n", "\r", "", "\r\r\n"][..]);
        let line = (start, text, end).prop_map(|(s, t, e)| format!("{s}{t}{e}"));
        (any::<bool>(), proptest::collection::vec(line, 0..8)).prop_map(|(versioned, lines)| {
            let body = lines.concat();
            if versioned {
                format!("v=0{body}")
            } else {
                body
            }
        })
    }

    /// A valid SDP with one character inserted, replaced or removed.
    fn mutated_sdp() -> impl Strategy<Value = String> {
        let base = proptest::sample::select(&[OFFER, "v=0\nm=", "v=0\r\n\r\nm=x\r\n\n"][..]);
        let c = proptest::sample::select(
            &[
                '\u{7f}', '\u{85}', '\u{e9}', '\u{0}', '\r', '\n', '\t', ' ', '~', 'm', '=', 'A',
                'z',
            ][..],
        );
        (base, any::<proptest::sample::Index>(), c, 0..3u8).prop_map(|(base, at, c, op)| {
            let mut chars: Vec<char> = base.chars().collect();
            let at = at.index(chars.len() + 1);
            match op {
                0 => chars.insert(at, c),
                1 if at < chars.len() => chars[at] = c,
                _ if at < chars.len() => {
                    chars.remove(at);
                }
                _ => chars.push(c),
            }
            chars.into_iter().collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The published pattern and the check agree on every string.
        #[test]
        fn the_pattern_says_what_the_check_accepts(sdp in prop_oneof![near_sdp(), mutated_sdp(), ".{0,40}"]) {
            let pattern = regex::Regex::new(SDP_PATTERN).unwrap();
            prop_assert_eq!(
                pattern.is_match(&sdp),
                check_plausible_sdp(&sdp, usize::MAX).is_ok(),
                "{:?}", sdp
            );
        }
    }
}
