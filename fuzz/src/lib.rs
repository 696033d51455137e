//! What the fuzz targets share: a fuzz input read as one peer message per
//! line, each tagged with its data channel and kind by its first byte.

use protocol::peer::Channel;
use protocol::wire::Payload;

/// The messages in `data`: one per line; a line starting with `i` came on
/// the `input` channel, `u` on `input-unreliable`, anything else on
/// `reconciliation` (the tag byte is dropped). `I`, `U` and `R` are binary
/// messages on those channels, their bytes the rest of the line (so a
/// binary message here never holds a newline byte; its `~` text form can).
/// Non-UTF-8 text lines are kept lossily: a peer can send anything.
pub fn messages(data: &[u8]) -> Vec<(Channel, Payload)> {
    data.split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let channel = match line[0].to_ascii_lowercase() {
                b'i' => Channel::Input,
                b'u' => Channel::Unreliable,
                _ => Channel::Reconciliation,
            };
            let body = &line[1..];
            let payload = if matches!(line[0], b'I' | b'U' | b'R') {
                Payload::Binary(body.to_vec())
            } else {
                Payload::Text(String::from_utf8_lossy(body).into_owned())
            };
            (channel, payload)
        })
        .collect()
}

/// The line that [`messages`] reads back as `text` on `channel`.
pub fn line(channel: Channel, text: &str) -> String {
    let tag = match channel {
        Channel::Input => 'i',
        Channel::Unreliable => 'u',
        Channel::Reconciliation => 'r',
    };
    format!("{tag}{text}\n")
}
