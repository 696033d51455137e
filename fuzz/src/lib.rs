//! What the fuzz targets share: a fuzz input read as one peer message per
//! line, each tagged with its data channel by its first byte.

use protocol::peer::Channel;

/// The messages in `data`: one per line; a line starting with `i` came on
/// the `input` channel, `u` on `input-unreliable`, anything else on
/// `reconciliation` (the tag byte is dropped). Non-UTF-8 lines are kept lossily: a peer can send anything.
pub fn messages(data: &[u8]) -> Vec<(Channel, String)> {
    data.split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let channel = match line[0] {
                b'i' => Channel::Input,
                b'u' => Channel::Unreliable,
                _ => Channel::Reconciliation,
            };
            (channel, String::from_utf8_lossy(&line[1..]).into_owned())
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
