//! The refused-words list: words and phrases no session name, host name or
//! lobby-visible metadata may hold.
//!
//! The file (`--word-list-file`) holds one entry per line; `#` starts a
//! comment. Text is compared in lower case, as words: letters and digits,
//! everything else a separator. An entry matches a word it equals, or, when
//! it ends in `*`, every word it begins; an entry of several words matches
//! those words in a row. So `ass` refuses "Ass Kickers" but not "Assembly",
//! and `ass*` refuses both.

use std::path::Path;

/// One entry: its words, and whether the last one is a prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    words: Vec<String>,
    prefix: bool,
}

/// The refused words.
#[derive(Clone, Debug, Default)]
pub struct WordList {
    entries: Vec<Entry>,
}

/// The words of `text`, lower case.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl WordList {
    /// Parses a list's text (blank lines and comments skipped).
    pub fn parse(text: &str) -> Self {
        let entries = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|line| {
                let (line, prefix) = match line.strip_suffix('*') {
                    Some(stem) => (stem, true),
                    None => (line, false),
                };
                let words = words_of(line);
                (!words.is_empty()).then_some(Entry { words, prefix })
            })
            .collect();
        Self { entries }
    }

    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<Self, String> {
        std::fs::read_to_string(path)
            .map(|text| Self::parse(&text))
            .map_err(|e| format!("cannot read the word list {}: {e}", path.display()))
    }

    /// Entries in the list.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list is empty (nothing is refused).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `text` holds a refused word or phrase.
    pub fn refuses(&self, text: &str) -> bool {
        if self.entries.is_empty() {
            return false;
        }
        let words = words_of(text);
        self.entries.iter().any(|e| {
            let n = e.words.len();
            words.windows(n).any(|run| {
                run.iter().zip(&e.words).enumerate().all(|(i, (w, want))| {
                    if e.prefix && i == n - 1 {
                        w.starts_with(want.as_str())
                    } else {
                        w == want
                    }
                })
            })
        })
    }

    /// Whether any string inside a JSON value (keys included) holds a
    /// refused word.
    pub fn refuses_json(&self, value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::String(s) => self.refuses(s),
            serde_json::Value::Array(items) => items.iter().any(|v| self.refuses_json(v)),
            serde_json::Value::Object(map) => map
                .iter()
                .any(|(k, v)| self.refuses(k) || self.refuses_json(v)),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_whole_prefixed_or_in_a_row() {
        let list = WordList::parse("# refused\nbadword\nrude*\n  two words  \n\n*\n");
        assert_eq!(list.len(), 3, "a lone '*' is no entry");
        assert!(list.refuses("The BadWord club"));
        assert!(list.refuses("badword"));
        assert!(list.refuses("x-badword-y"), "punctuation separates words");
        assert!(!list.refuses("badwords"), "a whole word only");
        assert!(list.refuses("Rudeness"));
        assert!(list.refuses("so RUDE"));
        assert!(!list.refuses("prude"));
        assert!(list.refuses("we are Two  Words here"));
        assert!(!list.refuses("two other words"));
        assert!(!list.refuses("Friday co-op"));
        assert!(!WordList::default().refuses("badword"));
    }

    #[test]
    fn json_strings_and_keys_are_looked_through() {
        let list = WordList::parse("badword");
        let ok = serde_json::json!({"mode": "coop", "tags": ["fun", 3, null]});
        assert!(!list.refuses_json(&ok));
        let nested = serde_json::json!({"tags": ["fun", {"x": "BADWORD"}]});
        assert!(list.refuses_json(&nested));
        let key = serde_json::json!({"badword": 1});
        assert!(list.refuses_json(&key));
    }
}
