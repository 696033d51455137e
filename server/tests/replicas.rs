//! Several `lobby-server` replicas on one PostgreSQL database (always run
//! against PostgreSQL): cross-replica long-poll wake-ups, lobby events from
//! other replicas, and riding out a database outage.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{SDP, START_MS, TestDb, TestServer, assert_error, eventually};
use lobby_api::api::{HostKind, SessionSummary};
use lobby_api::code::SessionCode;
use lobby_server::Config;
use lobby_server::clock::ManualClock;
use lobby_server::store::{
    ClaimOutcome, CreateOutcome, CreatorLimits, LobbyFields, SessionRecord, Store, StoreChange,
    StoredAnswer,
};
use serde_json::{Value, json};

/// Two replicas over one fresh PostgreSQL database. Each listens for the
/// other's changes once started (building the store waits for its
/// `LISTEN`), so a change made on one right away still reaches the other.
async fn two_replicas(tweak: impl Fn(&mut Config)) -> (TestServer, TestServer, Arc<TestDb>) {
    let db = Arc::new(TestDb::postgres().await);
    let mut config = Config::for_tests(db.url());
    config.disable_rate_limits = true;
    tweak(&mut config);
    let clock = ManualClock::new(START_MS);
    let a = TestServer::start_in(db.clone(), config.clone(), clock.clone()).await;
    let b = TestServer::start_in(db.clone(), config, clock).await;
    (a, b, db)
}

/// The admin token of Alice, the one moderator of
/// [`two_replicas_with_admin_api`].
const ALICE: &str = "alice-token-0123456789abcdef";

/// [`two_replicas`] with the admin API on, Alice its one moderator; the
/// token file is returned to be kept for the test.
async fn two_replicas_with_admin_api()
-> (TestServer, TestServer, Arc<TestDb>, tempfile::NamedTempFile) {
    let tokens = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(tokens.path(), format!("alice:{ALICE}\n")).expect("written");
    let path = tokens.path().to_owned();
    let (a, b, db) = two_replicas(move |c| c.admin_token_file = Some(path.clone())).await;
    (a, b, db, tokens)
}

/// A POST of the admin API on `srv` with Alice's token.
async fn post_admin(srv: &TestServer, path: &str, body: &Value) -> reqwest::Response {
    srv.client
        .post(srv.url(path))
        .bearer_auth(ALICE)
        .json(body)
        .send()
        .await
        .expect("an admin call")
}

async fn wait_until_polling(srv: &TestServer) {
    eventually(
        Duration::from_secs(5),
        "the long-poll registers",
        || async { srv.state.waiters.waiting() != 0 },
    )
    .await;
}

/// Host on A long-polls; the joiner reads and answers on B; returns the lag
/// between B accepting the answer and A's poll returning it.
async fn exchange_across(a: &TestServer, b: &TestServer) -> Duration {
    let (code, token) = a.create().await;
    let poll = {
        let client = a.client.clone();
        let url = a.url(&format!("/session/{code}/answer?round=1&waitMs=20000"));
        tokio::spawn(async move {
            let res = client.get(url).bearer_auth(token).send().await.unwrap();
            let at = Instant::now();
            (
                res.status().as_u16(),
                res.json::<Value>().await.unwrap(),
                at,
            )
        })
    };
    wait_until_polling(a).await;
    let view: Value = b.get_session(&code).await.json().await.unwrap();
    assert_eq!(view["round"], 1, "replica B reads the offer published on A");
    let res = b.answer(&code, 1, "Bob").await;
    let answered_at = Instant::now();
    assert_eq!(res.status(), 201);
    let (status, body, returned_at) = poll.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["name"], "Bob");
    returned_at.saturating_duration_since(answered_at)
}

#[tokio::test]
async fn an_answer_on_replica_b_wakes_the_long_poll_on_replica_a() {
    let (a, b, _db) = two_replicas(|_| {}).await;
    let lag = exchange_across(&a, &b).await;
    assert!(
        lag < Duration::from_millis(100),
        "the poll on A returned {lag:?} after B accepted"
    );
}

#[tokio::test]
async fn racing_answers_on_two_replicas_have_one_winner() {
    let (a, b, _db) = two_replicas(|_| {}).await;
    let (code, _) = a.create().await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let srv = if i % 2 == 0 { &a } else { &b };
        let (client, url) = (
            srv.client.clone(),
            srv.url(&format!("/session/{code}/answer")),
        );
        tasks.push(tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({"round": 1, "answer": SDP}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|&&s| s == 201).count(), 1);
    assert_eq!(statuses.iter().filter(|&&s| s == 409).count(), 19);
}

#[tokio::test]
async fn lobby_events_on_a_report_sessions_created_and_removed_on_b() {
    let (a, b, _db) = two_replicas(|_| {}).await;
    let mut events = a.subscribe("").await;
    let (code, token) = b.create().await;
    let data = events.expect_event("added", "added on A").await;
    assert_eq!(serde_json::from_str::<Value>(&data).unwrap()["code"], code);
    assert_eq!(
        a.lobby("").await["sessions"][0]["code"],
        code,
        "A's lobby lists B's session"
    );

    b.put(&json!({"code": code, "public": false}), Some(&token))
        .await;
    events.expect_event("removed", "removed on A").await;
    assert_eq!(a.lobby("").await["sessions"], json!([]));
}

/// A block placed through replica A is enforced by replica B within a
/// second (the change feed), and lifted there as fast.
#[tokio::test]
async fn a_block_placed_on_replica_a_is_enforced_on_replica_b_within_a_second() {
    let (a, b, _db, _tokens) = two_replicas_with_admin_api().await;
    let blocked = common::client_from("127.0.55.5".parse().unwrap());
    let create = |srv: &TestServer| {
        let (client, url) = (blocked.clone(), srv.url("/session"));
        async move { common::create_status(&client, url, &common::session_body()).await }
    };
    assert_eq!(create(&b).await, 201);
    let placed = Instant::now();
    let block = json!({"prefix": "127.0.55.0/24", "durationSecs": 600, "reason": "spam"});
    let res = post_admin(&a, "/admin/blocks", &block).await;
    assert_eq!(res.status(), 201);
    let id = res.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    let left = Duration::from_secs(1).saturating_sub(placed.elapsed());
    eventually(left, "B hears of the block", || async {
        !b.state.moderation.blocks.is_empty()
    })
    .await;
    let heard = placed.elapsed();
    eprintln!("replica B enforced the block {heard:?} after the call to A began");
    assert_eq!(
        create(&b).await,
        403,
        "refused on B {heard:?} after A placed it"
    );
    let res = a
        .client
        .delete(a.url(&format!("/admin/blocks/{id}")))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    eventually(Duration::from_secs(1), "B hears of the lift", || async {
        b.state.moderation.blocks.is_empty()
    })
    .await;
    assert_eq!(create(&b).await, 201);
}

/// A session hidden through replica A leaves B's lobby, and one ended
/// through A is `410 session_ended` on B, each within a second.
#[tokio::test]
async fn a_session_hidden_or_ended_on_replica_a_is_so_on_replica_b_within_a_second() {
    let (a, b, _db, _tokens) = two_replicas_with_admin_api().await;
    let (hidden, _) = b.create().await;
    let (ended, _) = b.create().await;
    let listed_on_b = |code: String| {
        let url = b.url("/lobby");
        let client = b.client.clone();
        async move {
            let page: Value = client.get(url).send().await.unwrap().json().await.unwrap();
            page["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["code"] == code.as_str())
        }
    };
    assert!(listed_on_b(hidden.clone()).await);
    let started = Instant::now();
    let hide = json!({"hidden": true, "reason": "rude"});
    let res = post_admin(&a, &format!("/admin/sessions/{hidden}/hide"), &hide).await;
    assert_eq!(res.status(), 204);
    let left = Duration::from_secs(1).saturating_sub(started.elapsed());
    eventually(left, "unlisted on B", || async {
        !listed_on_b(hidden.clone()).await
    })
    .await;
    eprintln!(
        "hidden on B {:?} after the call to A began",
        started.elapsed()
    );
    let started = Instant::now();
    let end = json!({"reason": "spam"});
    let res = post_admin(&a, &format!("/admin/sessions/{ended}/end"), &end).await;
    assert_eq!(res.status(), 204);
    let left = Duration::from_secs(1).saturating_sub(started.elapsed());
    eventually(left, "B answers 410", || async {
        match b.get_session(&ended).await.status().as_u16() {
            410 => Ok(()),
            other => Err(other),
        }
    })
    .await;
    eprintln!(
        "ended on B {:?} after the call to A began",
        started.elapsed()
    );
    assert_error(b.get_session(&ended).await, 410, "session_ended").await;
}

#[tokio::test]
async fn a_session_going_in_progress_on_b_is_shown_so_on_a() {
    let (a, b, _db) = two_replicas(|_| {}).await;
    let mut events = a.subscribe("").await;
    let (code, token) = b.create().await;
    events.expect_event("added", "added on A").await;
    // Nothing but `inProgress` changes: the trigger must still announce it.
    let res = b
        .put(&json!({"code": code, "inProgress": true}), Some(&token))
        .await;
    assert_eq!(res.status(), 200);
    let data = events.expect_event("updated", "updated on A").await;
    assert_eq!(
        serde_json::from_str::<Value>(&data).unwrap()["inProgress"],
        true
    );
    assert_eq!(a.lobby("").await["sessions"][0]["inProgress"], true);
    let view: Value = a.get_session(&code).await.json().await.unwrap();
    assert_eq!(view["inProgress"], true);
}

#[tokio::test]
async fn the_sweep_is_safe_with_every_replica_running_it() {
    let (a, b, _db) = two_replicas(|_| {}).await;
    for _ in 0..10 {
        a.create().await;
    }
    a.clock.advance_ms(3_600_000);
    let (da, db_) = tokio::join!(
        lobby_server::sessions::sweep(&a.state),
        lobby_server::sessions::sweep(&b.state)
    );
    assert_eq!(
        da.unwrap() + db_.unwrap(),
        10,
        "each expired session deleted exactly once"
    );
    assert_eq!(a.state.store.count_live(0).await.unwrap(), 0);
}

#[tokio::test]
async fn replicas_ride_out_a_database_outage() {
    let (a, b, db) = two_replicas(|c| c.db_acquire_timeout_ms = 500).await;
    let (code, token) = a.create().await;
    let name = db.name().to_owned();

    // The database goes away: new connections refused, existing ones killed.
    db.admin(&format!(
        "ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false"
    ))
    .await;
    db.admin(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    ))
    .await;
    for srv in [&a, &b] {
        assert_error(srv.get("/readyz").await, 503, "unavailable").await;
        assert_error(srv.get_session(&code).await, 503, "unavailable").await;
        assert_error(srv.answer(&code, 1, "x").await, 503, "unavailable").await;
        assert_eq!(srv.get("/healthz").await.status(), 200);
    }

    // It comes back: everything works again without a restart, nothing was lost.
    db.admin(&format!(
        "ALTER DATABASE {name} WITH ALLOW_CONNECTIONS true"
    ))
    .await;
    eventually(Duration::from_secs(15), "both replicas ready", || async {
        let ready = |srv: &TestServer| srv.client.get(srv.url("/readyz")).send();
        let (a, b) = (ready(&a).await, ready(&b).await);
        match (a.map(|r| r.status()), b.map(|r| r.status())) {
            (Ok(a), Ok(b)) if a == 200 && b == 200 => Ok(()),
            seen => Err(seen),
        }
    })
    .await;
    let view: Value = b.get_session(&code).await.json().await.unwrap();
    assert_eq!(view["round"], 1, "the session survived the outage");
    assert_eq!(a.poll(&code, &token, 1, 0).await.status(), 204);
    // Cross-replica wake-ups work again once the listeners have reconnected.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let lag = exchange_across(&a, &b).await;
        if lag < Duration::from_millis(100) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "wake-ups across replicas did not recover (lag {lag:?})"
        );
    }
}

/// Codes, total and cursor of one `GET /lobby` (what must agree across replicas).
async fn listing(srv: &TestServer, query: &str) -> (Vec<String>, Value, Value) {
    let page = srv.lobby(query).await;
    let codes = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["code"].as_str().unwrap().to_owned())
        .collect();
    (codes, page["total"].clone(), page["nextCursor"].clone())
}

#[tokio::test]
async fn every_replica_answers_searches_and_totals_alike() {
    let (a, b, db) = two_replicas(|_| {}).await;
    for i in 0..12u32 {
        let srv = if i % 2 == 0 { &a } else { &b };
        let (code, token) = srv
            .create_with(json!({
                "name": format!("{} {i}", if i % 3 == 0 { "Dragon" } else { "Goblin" }),
                "build": if i % 4 == 0 { "b2" } else { "b1" },
                "hostKind": if i % 5 == 0 { "daemon" } else { "player" },
            }))
            .await;
        if i % 3 == 1 {
            // Updated on the other replica: full now.
            let other = if i % 2 == 0 { &b } else { &a };
            other
                .put(&json!({"code": code, "players": 4}), Some(&token))
                .await;
        }
        a.clock.advance_ms(10);
    }
    eventually(Duration::from_secs(5), "replicas converge", || async {
        listing(&a, "?hasSpace=true").await.1 == 8 && listing(&b, "?hasSpace=true").await.1 == 8
    })
    .await;
    // A third replica builds its index from the store alone.
    let config = {
        let mut c = Config::for_tests(db.url());
        c.disable_rate_limits = true;
        c
    };
    let c = TestServer::start_in(db.clone(), config, a.clock.clone()).await;
    for query in [
        "",
        "?limit=5",
        "?q=dragon",
        "?q=gob&hasSpace=true",
        "?q=goblin&build=b1&limit=3",
        "?hostKind=daemon",
        "?q=dragon%209&build=b1&hasSpace=true&hostKind=player",
    ] {
        let on_a = listing(&a, query).await;
        assert_eq!(on_a, listing(&b, query).await, "A and B on {query}");
        assert_eq!(on_a, listing(&c, query).await, "A and a fresh C on {query}");
    }
    assert_eq!(listing(&a, "").await.1, 12);
    assert_eq!(listing(&a, "?q=dragon").await.1, 4);
    assert_eq!(listing(&c, "?q=goblin&hasSpace=true").await.1, 4);
}

/// A session for the store-level test below.
fn stored(code: &str) -> SessionRecord {
    SessionRecord {
        code: SessionCode::parse(code).unwrap(),
        token_hash: vec![1; 32],
        fields: LobbyFields {
            public: true,
            summary: SessionSummary {
                name: "n".into(),
                host_name: "h".into(),
                players: 1,
                max_players: 2,
                build: "b".into(),
                difficulty: None,
                campaign: None,
                host_kind: HostKind::Player,
                in_progress: false,
                bots: 0,
                start_at: None,
            },
            meta: None,
        },
        created_at: START_MS,
        expires_at: START_MS + 60_000,
        round: 1,
        offer: Some(SDP.into()),
        answered: None,
        creator: "c".into(),
    }
}

/// The next change a store reports, within 5 s.
async fn next(rx: &mut tokio::sync::mpsc::Receiver<StoreChange>) -> Option<StoreChange> {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("an announcement within 5 s")
}

#[tokio::test]
async fn a_replica_hears_the_others_changes_and_not_the_echo_of_its_own() {
    use sqlx::Connection;
    let db = TestDb::postgres().await;
    let settings = Config::for_tests(db.url()).store_settings();
    let (a, a_changes) = Store::connect(&settings).await.unwrap();
    let (b, b_changes) = Store::connect(&settings).await.unwrap();
    let (mut a_changes, mut b_changes) = (a_changes.unwrap(), b_changes.unwrap());
    let (x, y) = (stored("AAAAAAAA"), stored("BBBBBBBB"));
    let limits = CreatorLimits::default();
    assert_eq!(a.create(&x, limits).await.unwrap(), CreateOutcome::Created);
    assert_eq!(b.create(&y, limits).await.unwrap(), CreateOutcome::Created);
    // Announcements arrive in commit order, so each replica's first one
    // being the other's create means the echo of its own was dropped.
    let other = |r: &SessionRecord| Some(StoreChange::SessionChanged(r.code.clone()));
    assert_eq!(next(&mut a_changes).await, other(&y));
    assert_eq!(next(&mut b_changes).await, other(&x));
    // An answer reaches the other replica with the announcement, so its
    // long-polls need not read the row; one too big for a notification
    // comes as a plain wake-up, after which the long-polls read.
    let answer = StoredAnswer {
        round: 1,
        answer: format!("{SDP}a=x:{}\r\n", "y".repeat(3000)),
        name: "Bo:b".into(),
    };
    let now = START_MS;
    let claimed = b.claim_round(&y.code, &answer, now, None).await.unwrap();
    assert_eq!(claimed, ClaimOutcome::Claimed);
    assert_eq!(
        next(&mut a_changes).await,
        Some(StoreChange::AnsweredWith(y.code.clone(), answer))
    );
    let big = StoredAnswer {
        round: 1,
        answer: "z".repeat(7_000),
        name: "Al".into(),
    };
    assert_eq!(
        b.claim_round(&x.code, &big, now, None).await.unwrap(),
        ClaimOutcome::Claimed
    );
    assert_eq!(
        next(&mut a_changes).await,
        Some(StoreChange::Answered(x.code.clone()))
    );
    // A writer that names no origin (an operator in psql) reaches both; a
    // deleted row is announced as gone, which needs no read.
    let mut psql = sqlx::PgConnection::connect(&db.url()).await.unwrap();
    sqlx::query("DELETE FROM sessions WHERE code = 'AAAAAAAA'")
        .execute(&mut psql)
        .await
        .unwrap();
    let gone = Some(StoreChange::Removed(x.code.clone()));
    assert_eq!(next(&mut a_changes).await, gone);
    assert_eq!(next(&mut b_changes).await, gone);
    a.close().await;
    b.close().await;
}

/// Backends of the test database waiting on a lock.
async fn lock_waiters(admin: &mut sqlx::PgConnection, db: &TestDb) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
    )
    .bind(db.name())
    .fetch_one(admin)
    .await
    .unwrap()
}

/// Runs `firsts` (as many as their kind runs at once) while the sessions
/// table is locked, then `rest` behind them: they queue in the store (no
/// more statements wait on the lock in PostgreSQL than `firsts`) and go as
/// one statement once the lock is let go. The outcomes of `firsts` and of
/// `rest`, in order.
async fn behind_a_lock<T: Send + 'static>(
    db: &TestDb,
    firsts: Vec<tokio::task::JoinHandle<T>>,
    rest: impl FnOnce() -> Vec<tokio::task::JoinHandle<T>>,
    locker: &mut sqlx::PgConnection,
    admin: &mut sqlx::PgConnection,
) -> (Vec<T>, Vec<T>) {
    let in_flight = firsts.len() as i64;
    // A check's future cannot borrow `admin` mutably from the closure;
    // it takes the connection from a lock instead.
    let shared = tokio::sync::Mutex::new(&mut *admin);
    eventually(
        Duration::from_secs(5),
        "the first statements reach the lock",
        || async { lock_waiters(&mut **shared.lock().await, db).await >= in_flight },
    )
    .await;
    let rest = rest();
    // Long enough for each of them to reach PostgreSQL, had it not queued.
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_millis(300) {
        assert_eq!(
            lock_waiters(admin, db).await,
            in_flight,
            "only the first statements are in PostgreSQL"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sqlx::query("COMMIT").execute(&mut *locker).await.unwrap();
    let mut outcomes = (Vec::new(), Vec::new());
    for r in firsts {
        outcomes.0.push(r.await.unwrap());
    }
    for r in rest {
        outcomes.1.push(r.await.unwrap());
    }
    sqlx::query("BEGIN").execute(&mut *locker).await.unwrap();
    outcomes
}

/// Creates, reads, answers and deletes that arrive while one of their kind
/// is in flight share one statement on PostgreSQL, and each still gets
/// the outcome it would get alone: taken codes, expiry by its own clock,
/// one winner per round, wrong tokens refused.
#[tokio::test]
async fn requests_of_a_kind_share_a_statement_and_keep_their_own_outcomes() {
    use sqlx::Connection;
    let db = TestDb::postgres().await;
    let settings = Config::for_tests(db.url()).store_settings();
    let (store, _changes) = Store::connect(&settings).await.unwrap();
    let store = Arc::new(store);
    let mut locker = sqlx::PgConnection::connect(&db.url()).await.unwrap();
    let mut admin = sqlx::PgConnection::connect(&db.url()).await.unwrap();
    let lock = "LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE";
    let mut seed = 11u32;
    let mut draw = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        seed
    };
    let mut records: Vec<SessionRecord> = Vec::new();
    while records.len() < 21 {
        let code = SessionCode::generate(&mut draw);
        if records.iter().all(|r| r.code != code) {
            let mut r = stored(code.as_str());
            r.token_hash = vec![records.len() as u8; 32];
            records.push(r);
        }
    }
    let limits = CreatorLimits::default();
    let spawn =
        |f: std::pin::Pin<Box<dyn std::future::Future<Output = String> + Send>>| tokio::spawn(f);

    // Creates: twenty behind the first, one of them drawing a taken code.
    sqlx::query("BEGIN").execute(&mut locker).await.unwrap();
    sqlx::query(lock).execute(&mut locker).await.unwrap();
    let create = |r: SessionRecord| {
        let s = Arc::clone(&store);
        spawn(Box::pin(async move {
            format!("{:?}", s.create(&r, limits).await.unwrap())
        }))
    };
    let mut twice = records[20].clone();
    twice.code = records[3].code.clone();
    let (first, rest) = behind_a_lock(
        &db,
        vec![create(records[0].clone())],
        || {
            let mut rest: Vec<_> = records[1..20].iter().cloned().map(create).collect();
            rest.push(create(twice));
            rest
        },
        &mut locker,
        &mut admin,
    )
    .await;
    assert_eq!(first, ["Created"]);
    assert_eq!(rest.iter().filter(|o| *o == "Created").count(), 19);
    assert_eq!(
        rest[19], "CodeTaken",
        "the second draw of a code in a group"
    );

    // Reads (two run at once): each by its own clock; unknown codes read
    // as none.
    sqlx::query(lock).execute(&mut locker).await.unwrap();
    let read = |code: SessionCode, now: i64| {
        let s = Arc::clone(&store);
        spawn(Box::pin(async move {
            match s.get(&code, now).await.unwrap() {
                Some(r) => r.code.as_str().to_owned(),
                None => "none".to_owned(),
            }
        }))
    };
    let late = START_MS + 60_000;
    let (first, rest) = behind_a_lock(
        &db,
        vec![
            read(records[0].code.clone(), START_MS),
            read(records[0].code.clone(), START_MS),
        ],
        || {
            vec![
                read(records[1].code.clone(), START_MS),
                read(records[1].code.clone(), late),
                read(records[2].code.clone(), START_MS),
                read(SessionCode::parse("ZZZZZZZZ").unwrap(), START_MS),
            ]
        },
        &mut locker,
        &mut admin,
    )
    .await;
    assert_eq!(first, [records[0].code.as_str(); 2]);
    let expected = [
        records[1].code.as_str(),
        "none",
        records[2].code.as_str(),
        "none",
    ];
    assert_eq!(rest, expected);

    // Answers: three for each of sessions 1-6, one of them for a round
    // that is not open; exactly one wins each session.
    sqlx::query(lock).execute(&mut locker).await.unwrap();
    let claim = |code: SessionCode, round: u32, name: String| {
        let s = Arc::clone(&store);
        spawn(Box::pin(async move {
            let answer = StoredAnswer {
                round,
                answer: SDP.into(),
                name,
            };
            format!(
                "{:?}",
                s.claim_round(&code, &answer, START_MS, None).await.unwrap()
            )
        }))
    };
    let (first, rest) = behind_a_lock(
        &db,
        vec![claim(records[0].code.clone(), 1, "first".into())],
        || {
            let mut rest = Vec::new();
            for r in &records[1..7] {
                rest.push(claim(r.code.clone(), 1, "a".into()));
                rest.push(claim(r.code.clone(), 1, "b".into()));
                rest.push(claim(r.code.clone(), 2, "c".into()));
            }
            rest
        },
        &mut locker,
        &mut admin,
    )
    .await;
    assert_eq!(first, ["Claimed"]);
    for (i, outcomes) in rest.chunks(3).enumerate() {
        let won = outcomes.iter().filter(|o| *o == "Claimed").count();
        assert_eq!(won, 1, "session {i}: {outcomes:?}");
        assert_eq!(outcomes[2], "RoundTaken", "round 2 is not open");
        let stored = store
            .get(&records[i + 1].code, START_MS)
            .await
            .unwrap()
            .unwrap();
        let winner = if outcomes[0] == "Claimed" { "a" } else { "b" };
        assert_eq!(
            stored.answered.unwrap().name,
            winner,
            "the winner's answer is stored"
        );
    }

    // Deletes: by the right token (twice for one session), and by a wrong one.
    sqlx::query(lock).execute(&mut locker).await.unwrap();
    let delete = |r: &SessionRecord, hash: Vec<u8>| {
        let (s, code) = (Arc::clone(&store), r.code.clone());
        spawn(Box::pin(async move {
            match s.delete_authorized(&code, &hash, START_MS).await.unwrap() {
                lobby_server::store::Authorized::Done(r) => format!("deleted {}", r.code),
                lobby_server::store::Authorized::Refused(Some(_)) => "refused".to_owned(),
                lobby_server::store::Authorized::Refused(None) => "gone".to_owned(),
            }
        }))
    };
    let (first, rest) = behind_a_lock(
        &db,
        vec![delete(&records[0], records[0].token_hash.clone())],
        || {
            vec![
                delete(&records[1], records[1].token_hash.clone()),
                delete(&records[1], records[1].token_hash.clone()),
                delete(&records[2], records[1].token_hash.clone()),
                delete(&records[3], records[3].token_hash.clone()),
            ]
        },
        &mut locker,
        &mut admin,
    )
    .await;
    assert_eq!(first, [format!("deleted {}", records[0].code)]);
    let deleted = |i: usize| format!("deleted {}", records[i].code);
    // One of the two deletes of one session removed it; the other came after.
    let mut twice = rest[..2].to_vec();
    twice.sort();
    assert_eq!(twice, vec![deleted(1), "gone".into()]);
    assert_eq!(rest[2..], ["refused".to_owned(), deleted(3)]);
    sqlx::query("COMMIT").execute(&mut locker).await.unwrap();
    assert_eq!(store.count_live(START_MS).await.unwrap(), 17);
    store.close().await;
}

/// Issue 44: PostgreSQL had no statement timeout, so one statement stuck
/// behind a lock held its kind's queue until everyone got 503. A statement
/// now gives up after `--db-statement-timeout-ms` with an error (a 503 to
/// its requests), and the store serves again once the lock goes.
#[tokio::test]
async fn a_stuck_statement_is_cancelled_after_the_statement_timeout() {
    use sqlx::Connection;
    let db = TestDb::postgres().await;
    let mut config = Config::for_tests(db.url());
    config.db_statement_timeout_ms = 300;
    let (store, _changes) = Store::connect(&config.store_settings()).await.unwrap();
    let mut locker = sqlx::PgConnection::connect(&db.url()).await.unwrap();
    sqlx::query("BEGIN").execute(&mut locker).await.unwrap();
    sqlx::query("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        .execute(&mut locker)
        .await
        .unwrap();
    let began = Instant::now();
    let stuck = tokio::time::timeout(
        Duration::from_secs(10),
        store.create(&stored("STUCK234"), CreatorLimits::default()),
    )
    .await
    .expect("the statement gave up within 10 s");
    assert!(stuck.is_err(), "{stuck:?}");
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "cancelled after {:?}",
        began.elapsed()
    );
    sqlx::query("ROLLBACK").execute(&mut locker).await.unwrap();
    assert_eq!(
        store
            .create(&stored("FREED234"), CreatorLimits::default())
            .await
            .unwrap(),
        CreateOutcome::Created
    );
}
