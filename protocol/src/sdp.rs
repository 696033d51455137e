//! A cheap plausibility check for SDP bodies.
//!
//! The lobby server relays SDP without parsing it; this check only rejects
//! what cannot be a session description (empty strings, JSON pasted by
//! mistake, binary noise) so such mistakes fail at the joiner's POST with a
//! clear error instead of inside the host's WebRTC stack.

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
    /// A line is not of the `x=value` form or contains control characters.
    #[error("SDP line {line} is not of the form \"x=value\"")]
    MalformedLine {
        /// One-based line number.
        line: usize,
    },
}

/// Checks that `sdp` looks like a session description of at most `max_bytes`.
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
            && !line.chars().any(|c| c.is_control() && c != '\t');
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
}
