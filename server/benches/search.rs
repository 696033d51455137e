//! The dearest lobby page the server renders (issue 44, finding 6): eight
//! search words, each the prefix of a word of every one of 10,000 listed
//! sessions, 100 sessions a page, rendered afresh (as a client-made cursor
//! forces), against the cheapest search of the same page (one word).
//! `cargo bench -p lobby-server --bench search`; figures in
//! docs/benchmarks.md.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lobby_api::api::{HostKind, SessionSummary};
use lobby_api::code::SessionCode;
use lobby_server::lobby_index::{LobbyFilter, LobbyIndex, PAGE_CACHE_BYTES, PageQuery};
use lobby_server::store::{LobbyFields, SessionRecord};

const SESSIONS: usize = 10_000;

/// A code for session `i` (8 symbols of the code alphabet).
fn code(i: usize) -> SessionCode {
    const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
    let mut n = i;
    let text: String = (0..8)
        .map(|_| {
            let c = ALPHABET[n % ALPHABET.len()] as char;
            n /= ALPHABET.len();
            c
        })
        .collect();
    SessionCode::parse(&text).expect("a code")
}

/// Session `i`, named with `words` (and its number), hosted by `host`.
fn record(i: usize, words: &str, host: &str) -> SessionRecord {
    SessionRecord {
        code: code(i),
        token_hash: Vec::new(),
        fields: LobbyFields {
            public: true,
            summary: SessionSummary {
                name: format!("{words} {i}"),
                host_name: host.into(),
                players: 1,
                max_players: 8,
                build: "b1".into(),
                difficulty: None,
                campaign: None,
                host_kind: HostKind::Player,
                in_progress: false,
                bots: 0,
                start_at: None,
            },
            meta: None,
        },
        created_at: i as i64,
        expires_at: i64::MAX,
        round: 0,
        offer: None,
        answered: None,
        creator: String::new(),
    }
}

fn bench(c: &mut Criterion) {
    // Every session matches every word.
    let all = LobbyIndex::new(Duration::from_secs(1), PAGE_CACHE_BYTES);
    // Half match seven words, half the eighth: no session matches all
    // eight, and the rarest word's listing holds 5,000.
    let none = LobbyIndex::new(Duration::from_secs(1), PAGE_CACHE_BYTES);
    for i in 0..SESSIONS {
        all.upsert(&record(
            i,
            "alpha bravo charlie delta echo foxtrot golf",
            "hotel",
        ));
        if i % 2 == 0 {
            none.upsert(&record(
                i,
                "alpha bravo charlie delta echo foxtrot golf",
                "ada",
            ));
        } else {
            none.upsert(&record(i, "hotel india", "juliet"));
        }
    }
    let page = |q: &str| PageQuery {
        filter: LobbyFilter::default().with_search(q),
        limit: 100,
        after: None,
    };
    let mut group = c.benchmark_group("lobby page rendered afresh, 10,000 sessions");
    for (name, index, query) in [
        ("one word, all match", &all, page("alpha")),
        ("eight words, all match", &all, page("a b c d e f g h")),
        ("eight words, none match", &none, page("a b c d e f g h")),
    ] {
        group.bench_function(name, |b| b.iter(|| index.rendered_page(&query, 0)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
