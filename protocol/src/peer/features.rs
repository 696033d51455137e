//! The hello features a connection took up: the ones both sides named
//! (the host offers in `host-hello`, the guest names back in
//! `guest-hello`; anything only one side named does not count).

use super::FEATURE_COMPACT;
use crate::wire::WireFormat;

/// The features in use on one host-guest connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features(Vec<String>);

impl Features {
    /// The features in `theirs` that `ours` names too, in `theirs`' order,
    /// each once (a peer may repeat a name any number of times; the result
    /// is never longer than `ours`).
    pub fn agreed(theirs: &[String], ours: &[String]) -> Self {
        let mut agreed: Vec<String> = Vec::with_capacity(ours.len());
        for f in theirs {
            if ours.contains(f) && !agreed.contains(f) {
                agreed.push(f.clone());
            }
        }
        Self(agreed)
    }

    /// Whether feature `name` is in use.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|f| f == name)
    }

    /// How messages on this connection are written.
    pub fn wire_format(&self) -> WireFormat {
        if self.has(FEATURE_COMPACT) {
            WireFormat::Compact
        } else {
            WireFormat::Json
        }
    }

    /// The feature names, as a hello lists them.
    pub fn names(&self) -> &[String] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_both_sides_name_counts() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let f = Features::agreed(
            &names(&["ping", "compact", "telepathy"]),
            &names(&["compact", "ping", "input-delay"]),
        );
        assert_eq!(f.names(), names(&["ping", "compact"]));
        assert!(f.has("ping") && !f.has("input-delay") && !f.has("telepathy"));
        assert_eq!(f.wire_format(), WireFormat::Compact);
        assert_eq!(Features::default().wire_format(), WireFormat::Json);
    }

    #[test]
    fn repeated_names_count_once() {
        let ours = vec!["ping".to_string(), "compact".to_string()];
        let mut theirs = vec!["ping".to_string(); 10_000];
        theirs.push("compact".into());
        theirs.extend(std::iter::repeat_n("compact".to_string(), 10_000));
        let f = Features::agreed(&theirs, &ours);
        assert_eq!(f.names(), ["ping", "compact"]);
        assert!(f.names().len() <= ours.len());
    }
}
