//! A store that refuses writes (issue 24, finding 6): with the SQLite file
//! locked by another connection, every write answers 503 and leaves no
//! trace: no answer reaches the host, no round is used up, no session is
//! counted against its address or the lobby, nothing changes in the
//! listing, and no row is left behind once the lock is gone.
//!
//! Always on SQLite: the embedded backend is the one that keeps sessions in
//! memory next to the file; PostgreSQL writes are single statements that
//! either commit or change nothing.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{SDP, START_MS, TestDb, TestServer, assert_error, sdp_of};
use lobby_server::Config;
use lobby_server::clock::ManualClock;
use serde_json::{Value, json};
use sqlx::{Connection, SqliteConnection};

/// Bytes of the bigger offer the update publishes.
const BIG_OFFER: usize = 3_000;

/// A server on a fresh SQLite file, with the per-address and lobby-wide
/// caps at 4 sessions, so one session counted by mistake shows as a
/// refused create; and the address's byte budget just above what the
/// test's sessions come to hold (three small offers, an answer, one big
/// offer), so bytes a failed change kept would show as a refused change.
async fn start_capped() -> TestServer {
    let db = Arc::new(TestDb::Sqlite(tempfile::tempdir().expect("temp dir")));
    let mut config = Config::for_tests(db.url());
    config.max_sessions_per_address = 4;
    config.max_sessions = 4;
    let joiner = "joiner".len();
    config.max_session_bytes_per_address = (3 * SDP.len() + joiner + BIG_OFFER + 100) as u64;
    TestServer::start_in(db, config, ManualClock::new(START_MS)).await
}

/// Another connection to the server's file holding SQLite's write lock
/// (`BEGIN EXCLUSIVE`) until it is dropped.
async fn lock_database(url: &str) -> SqliteConnection {
    let mut conn = SqliteConnection::connect(url)
        .await
        .expect("second connection");
    sqlx::query("BEGIN EXCLUSIVE")
        .execute(&mut conn)
        .await
        .expect("exclusive lock");
    conn
}

async fn rows_in_file(url: &str) -> Vec<String> {
    let mut conn = SqliteConnection::connect(url).await.expect("reader");
    let mut codes: Vec<String> = sqlx::query_scalar("SELECT code FROM sessions")
        .fetch_all(&mut conn)
        .await
        .expect("read rows");
    codes.sort();
    codes
}

fn session_body(name: &str) -> Value {
    json!({"name": name, "hostName": "Ada", "maxPlayers": 4, "build": "b1",
           "hostKind": "player", "offer": SDP})
}

#[tokio::test]
async fn writes_refused_by_a_locked_database_leave_no_trace() {
    let srv = start_capped().await;
    let url = srv.db.url();
    let (answered, answered_token) = srv.create_with(json!({"name": "Answered"})).await;
    let (updated, updated_token) = srv.create_with(json!({"name": "Updated"})).await;
    let (deleted, deleted_token) = srv.create_with(json!({"name": "Deleted"})).await;

    let lock = lock_database(&url).await;
    let (new_body, update) = (session_body("Never stored"), update_body(&updated));
    let (create, answer, update, delete) = tokio::time::timeout(Duration::from_secs(25), async {
        tokio::join!(
            srv.put(&new_body, None),
            srv.answer(&answered, 1, "joiner"),
            srv.put(&update, Some(&updated_token)),
            srv.delete_session(&deleted, &deleted_token),
        )
    })
    .await
    .expect("the writes give up within the database's busy timeout");
    assert_error(create, 503, "unavailable").await;
    assert_error(answer, 503, "unavailable").await;
    assert_error(update, 503, "unavailable").await;
    assert_error(delete, 503, "unavailable").await;

    // Still locked: what readers see is what was committed before.
    let poll = srv.poll(&answered, &answered_token, 1, 0).await;
    assert_eq!(poll.status(), 204, "no answer reached the host");
    let view: Value = srv.get_session(&answered).await.json().await.unwrap();
    assert_eq!(view["round"], 1, "the round is still open");
    let view: Value = srv.get_session(&updated).await.json().await.unwrap();
    assert_eq!(
        (view["name"].clone(), view["round"].clone()),
        (json!("Updated"), json!(1))
    );
    assert_eq!(srv.get_session(&deleted).await.status(), 200, "not deleted");
    let lobby = srv.lobby("").await;
    let mut names: Vec<&str> = lobby["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["Answered", "Deleted", "Updated"]);

    lock.close().await.expect("release the lock");

    // The joiner's retry wins the round it never got; the host sees it.
    assert_eq!(srv.answer(&answered, 1, "joiner").await.status(), 201);
    let poll: Value = srv
        .poll(&answered, &answered_token, 1, 0)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(poll["name"], "joiner");
    // The update opens round 2, not 3.
    let res = srv.put(&update_body(&updated), Some(&updated_token)).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap()["round"], 2);
    // The failed changes kept no place and no bytes under the caps: a
    // fourth session fits.
    let (fourth, _) = srv.create_with(json!({"name": "Fourth"})).await;
    assert_eq!(
        srv.delete_session(&deleted, &deleted_token).await.status(),
        204
    );
    let mut expected = vec![answered, updated, fourth];
    expected.sort();
    assert_eq!(rows_in_file(&url).await, expected, "no row left behind");
}

/// A rename that publishes a bigger offer.
fn update_body(code: &str) -> Value {
    let mut body = session_body("Renamed");
    body["code"] = json!(code);
    body["offer"] = json!(sdp_of(BIG_OFFER));
    body
}
