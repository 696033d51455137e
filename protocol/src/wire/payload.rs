//! The forms a peer writes its messages in ([`WireFormat`]) and one
//! data-channel message, text or binary ([`Payload`]).

use serde::Serialize;

/// How a peer writes its messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WireFormat {
    /// JSON for everything (the spec's form).
    #[default]
    Json,
    /// The compact form for tick bundles, inputs and snapshots; JSON for
    /// the rest.
    Compact,
    /// The compact records, and pings and pongs as records too, as binary
    /// messages ([`Payload::Binary`]); JSON for the rest. As text
    /// ([`crate::peer::HostMessage::encode`]) its records are `~` text.
    Binary,
}

impl WireFormat {
    /// Every form, in the order a broadcast goes out in.
    pub const ALL: [WireFormat; 3] = [WireFormat::Json, WireFormat::Compact, WireFormat::Binary];

    /// `peers` split by the form each takes (`format_of`): one broadcast
    /// per form, in [`WireFormat::ALL`]'s order, none for a form nobody
    /// takes.
    pub fn split<T>(peers: Vec<T>, format_of: impl Fn(&T) -> WireFormat) -> Vec<(Self, Vec<T>)> {
        let mut groups: Vec<(Self, Vec<T>)> = Vec::new();
        for peer in peers {
            let format = format_of(&peer);
            match groups.iter_mut().find(|(f, _)| *f == format) {
                Some((_, group)) => group.push(peer),
                None => groups.push((format, vec![peer])),
            }
        }
        groups.sort_by_key(|(f, _)| Self::ALL.iter().position(|a| a == f));
        groups
    }
}

/// One data-channel message: text (JSON, or a compact record's `~` text)
/// or binary (a compact record's bytes).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum Payload {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Vec<u8>),
}

impl Payload {
    /// The message's size in bytes (what budgets and meters count).
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether the message has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message's bytes (UTF-8 for text).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Payload::Text(t) => t.as_bytes(),
            Payload::Binary(b) => b,
        }
    }
}

impl From<String> for Payload {
    fn from(text: String) -> Self {
        Payload::Text(text)
    }
}

impl From<&str> for Payload {
    fn from(text: &str) -> Self {
        Payload::Text(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broadcast_splits_by_every_form() {
        let format = |n: &u8| WireFormat::ALL[usize::from(*n % 3)];
        let split = WireFormat::split(vec![5, 0, 1, 2, 3, 4], format);
        assert_eq!(
            split,
            vec![
                (WireFormat::Json, vec![0, 3]),
                (WireFormat::Compact, vec![1, 4]),
                (WireFormat::Binary, vec![5, 2]),
            ]
        );
        assert!(WireFormat::split(Vec::<u8>::new(), format).is_empty());
        let binary_only = WireFormat::split(vec![2], format);
        assert_eq!(binary_only, vec![(WireFormat::Binary, vec![2])]);
    }

    #[test]
    fn a_payload_shows_as_a_string_or_a_list_of_bytes() {
        let text = serde_json::to_string(&Payload::from("hi")).unwrap();
        let binary = serde_json::to_string(&Payload::Binary(vec![1, 200])).unwrap();
        assert_eq!((text.as_str(), binary.as_str()), (r#""hi""#, "[1,200]"));
        assert_eq!(Payload::Binary(vec![1, 200]).len(), 2);
        assert!(Payload::from(String::new()).is_empty());
    }
}
