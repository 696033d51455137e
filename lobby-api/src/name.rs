//! Sanitizing untrusted display names and other short labels.
//!
//! Names come from other peers and from anonymous HTTP clients, so every
//! boundary that accepts one runs it through [`sanitize_label`]: control
//! characters and bidirectional overrides are stripped, whitespace runs
//! collapse to one space, the ends are trimmed, and the length is capped in
//! characters. An empty result means "unnamed".

/// Longest player display name, in characters.
pub const DISPLAY_NAME_MAX_CHARS: usize = 32;

/// Longest session name shown in the lobby, in characters.
pub const SESSION_NAME_MAX_CHARS: usize = 64;

/// Longest short label (build ref, difficulty, campaign), in characters.
pub const LABEL_MAX_CHARS: usize = 64;

/// Characters that reorder text on screen and can make a name lie about
/// itself (U+202A..U+202E, U+2066..U+2069), plus zero-width joiners' kin.
fn is_format_trick(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}'..='\u{200F}' | '\u{FEFF}')
}

/// Returns `raw` with control and bidi-override characters removed,
/// whitespace collapsed and trimmed, and at most `max_chars` characters.
pub fn sanitize_label(raw: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(raw.len().min(max_chars * 4));
    let mut count = 0usize;
    let mut pending_space = false;
    for c in raw.chars() {
        if c.is_whitespace() {
            pending_space = count > 0;
            continue;
        }
        if c.is_control() || is_format_trick(c) {
            continue;
        }
        if pending_space {
            if count + 1 >= max_chars {
                break;
            }
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        if count >= max_chars {
            break;
        }
        out.push(c);
        count += 1;
    }
    out
}

/// Sanitizes a player's display name ([`DISPLAY_NAME_MAX_CHARS`]).
pub fn sanitize_display_name(raw: &str) -> String {
    sanitize_label(raw, DISPLAY_NAME_MAX_CHARS)
}

/// `name` made distinct from every name `taken` says is in use (compared
/// without regard to case): itself when free, else `name (2)`, `name (3)`,
/// ..., the name shortened so the whole stays within
/// [`DISPLAY_NAME_MAX_CHARS`]. An empty name ("unnamed") is left empty.
pub fn distinct_name(name: &str, taken: impl Fn(&str) -> bool) -> String {
    if name.is_empty() || !taken(name) {
        return name.to_owned();
    }
    (2u32..)
        .map(|n| {
            let suffix = format!(" ({n})");
            let room = DISPLAY_NAME_MAX_CHARS.saturating_sub(suffix.chars().count());
            let base: String = name.chars().take(room).collect();
            format!("{}{suffix}", base.trim_end())
        })
        .find(|candidate| !taken(candidate))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strips_controls_and_collapses_space() {
        assert_eq!(
            sanitize_display_name("  Ada\u{0007}\n  Lovelace\t"),
            "Ada Lovelace"
        );
        assert_eq!(sanitize_display_name("\u{202E}evil"), "evil");
        assert_eq!(sanitize_display_name("\u{0000}\u{001b}"), "");
    }

    #[test]
    fn caps_length_in_characters() {
        let long = "é".repeat(100);
        assert_eq!(
            sanitize_display_name(&long).chars().count(),
            DISPLAY_NAME_MAX_CHARS
        );
    }

    proptest! {
        #[test]
        fn output_is_clean_bounded_and_idempotent(raw in ".{0,200}", max in 1usize..80) {
            let once = sanitize_label(&raw, max);
            prop_assert!(once.chars().count() <= max);
            prop_assert!(!once.chars().any(|c| c.is_control()));
            prop_assert_eq!(once.trim(), once.as_str());
            prop_assert_eq!(sanitize_label(&once, max), once);
        }
    }

    #[test]
    fn a_taken_name_gets_the_first_free_number_and_stays_within_the_limit() {
        let taken = ["Tester", "tester (2)", "Ada"];
        let is_taken = |n: &str| taken.iter().any(|t| t.eq_ignore_ascii_case(n));
        assert_eq!(distinct_name("Bea", is_taken), "Bea");
        assert_eq!(distinct_name("TESTER", is_taken), "TESTER (3)");
        assert_eq!(distinct_name("Ada", is_taken), "Ada (2)");
        assert_eq!(distinct_name("", is_taken), "");
        let long = "x".repeat(DISPLAY_NAME_MAX_CHARS);
        let got = distinct_name(&long, |n| n == long);
        assert_eq!(got.chars().count(), DISPLAY_NAME_MAX_CHARS);
        assert!(got.ends_with(" (2)"));
    }
}
