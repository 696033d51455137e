//! The change listener: other replicas' `NOTIFY campfire_changes`
//! announcements, read and sorted into [`StoreChange`]s for the service
//! (this replica's own echoes dropped), through the bounded change feed.

use std::time::Duration;

use lobby_api::code::SessionCode;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use crate::store::change_feed::ChangeFeed;
use crate::store::{StoreChange, StoredAnswer};

/// Forwards other replicas' notifications as [`StoreChange`]s until
/// stopped, dropping those from `origin` (this replica). When the
/// listener's connection drops, notifications may have been missed, so a
/// `Resync` goes out; the listener reconnects on the next receive.
pub(super) async fn listen(
    mut listener: PgListener,
    tx: ChangeFeed,
    origin: String,
    stop: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = listener.try_recv() => next,
        };
        let change = match next {
            Ok(Some(notification)) => match parse_payload(notification.payload(), &origin) {
                Some(Announcement::Other(change)) => change,
                Some(Announcement::Own) => continue,
                None => {
                    tracing::warn!(
                        payload = notification.payload(),
                        "unexpected session notification"
                    );
                    continue;
                }
            },
            Ok(None) => {
                tracing::warn!("lost the PostgreSQL notification connection; reconnecting");
                StoreChange::Resync
            }
            Err(err) => {
                tracing::warn!(error = %err, "PostgreSQL notifications unavailable; retrying");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
                StoreChange::Resync
            }
        };
        tx.push(change);
    }
}

/// A notification, as the listener sorts it.
#[derive(Debug, PartialEq, Eq)]
enum Announcement {
    /// This replica's own change: already applied.
    Own,
    /// Another replica's change (or one from a writer without an origin).
    Other(StoreChange),
}

/// Reads a `KIND:CODE:ORIGIN[:DETAIL]` payload; `None` for anything else.
/// A detail that cannot be read only costs the read it would have spared.
fn parse_payload(payload: &str, own_origin: &str) -> Option<Announcement> {
    let mut parts = payload.splitn(4, ':');
    let (kind, code, origin) = (parts.next()?, parts.next()?, parts.next()?);
    let detail = parts.next();
    if (kind, code, detail) == ("m", "", None) {
        return Some(if origin == own_origin {
            Announcement::Own
        } else {
            Announcement::Other(StoreChange::Moderation)
        });
    }
    let code = SessionCode::parse(code).ok()?;
    let change = match (kind, detail) {
        ("a", Some(json)) => match serde_json::from_str::<StoredAnswer>(json) {
            Ok(answer) => StoreChange::AnsweredWith(code, answer),
            Err(_) => StoreChange::Answered(code),
        },
        ("a", None) => StoreChange::Answered(code),
        ("s", Some("gone")) => StoreChange::Removed(code),
        ("s", _) => StoreChange::SessionChanged(code),
        _ => return None,
    };
    Some(if origin == own_origin {
        Announcement::Own
    } else {
        Announcement::Other(change)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_sorted_by_origin_and_junk_is_refused() {
        let code = SessionCode::parse("ABCDEFGH").unwrap();
        assert_eq!(
            parse_payload("s:ABCDEFGH:0a1b", "0a1b"),
            Some(Announcement::Own)
        );
        assert_eq!(
            parse_payload("a:ABCDEFGH:0a1b", "ffff"),
            Some(Announcement::Other(StoreChange::Answered(code.clone())))
        );
        // A writer without an origin (psql, an older replica) is never us.
        assert_eq!(
            parse_payload("s:ABCDEFGH:", "0a1b"),
            Some(Announcement::Other(StoreChange::SessionChanged(
                code.clone()
            )))
        );
        // A change that no longer exists needs no read.
        assert_eq!(
            parse_payload("s:ABCDEFGH:0a1b:gone", "ffff"),
            Some(Announcement::Other(StoreChange::Removed(code.clone())))
        );
        assert_eq!(
            parse_payload("s:ABCDEFGH:0a1b:gone", "0a1b"),
            Some(Announcement::Own)
        );
        // An answer comes with the announcement; colons inside it are its own.
        let json = r#"{"round":3,"answer":"v=0\r\na=x:y\r\n","name":"Bo:b"}"#;
        assert_eq!(
            parse_payload(&format!("a:ABCDEFGH:0a1b:{json}"), "ffff"),
            Some(Announcement::Other(StoreChange::AnsweredWith(
                code.clone(),
                StoredAnswer {
                    round: 3,
                    answer: "v=0\r\na=x:y\r\n".into(),
                    name: "Bo:b".into(),
                }
            )))
        );
        // A detail that cannot be read falls back to the read.
        for unreadable in [r#"{"round":-1,"answer":"","name":""}"#, "{", "gone"] {
            assert_eq!(
                parse_payload(&format!("a:ABCDEFGH:0a1b:{unreadable}"), "ffff"),
                Some(Announcement::Other(StoreChange::Answered(code.clone()))),
                "{unreadable}"
            );
        }
        assert_eq!(
            parse_payload("s:ABCDEFGH:0a1b:later", "ffff"),
            Some(Announcement::Other(StoreChange::SessionChanged(
                code.clone()
            )))
        );
        // The moderators' blocks changed: no code.
        assert_eq!(
            parse_payload("m::0a1b", "ffff"),
            Some(Announcement::Other(StoreChange::Moderation))
        );
        assert_eq!(parse_payload("m::0a1b", "0a1b"), Some(Announcement::Own));
        for junk in [
            "m:ABCDEFGH:0a1b",
            "m::0a1b:x",
            "s:ABCDEFGH",
            "x:ABCDEFGH:0a1b",
            "s:not a code:0a1b",
            "",
            "s",
        ] {
            assert_eq!(parse_payload(junk, "0a1b"), None, "{junk:?}");
        }
    }
}
