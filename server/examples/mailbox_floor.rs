//! The cost floor of an HTTP signaling mailbox on this stack, for
//! `scripts/bench-exchange`: the five requests of an exchange (create with
//! an offer, read it, answer, the host's long-poll, delete) answered by
//! axum on one thread from a map in memory, with none of `lobby-server`'s
//! work: no database, no validation, no limits, no lobby, no metrics.
//! It is what any HTTP mailbox pays per exchange before doing its job.
//!
//! `cargo run --release -p lobby-server --example mailbox_floor -- ADDR`

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use dashmap::DashMap;
use lobby_api::code::SessionCode;
use serde_json::{Value, json};
use tokio::sync::watch;

/// One session: its host's token, its offer, and the answer once posted.
struct Mailbox {
    token: String,
    offer: Value,
    answer: watch::Sender<Option<Value>>,
}

type Sessions = Arc<DashMap<String, Mailbox>>;

async fn create(
    State(sessions): State<Sessions>,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let code = SessionCode::generate(rand::random::<u32>)
        .as_str()
        .to_owned();
    let token = format!("{:032x}", rand::random::<u128>());
    let mailbox = Mailbox {
        token: token.clone(),
        offer: body.get("offer").cloned().unwrap_or(Value::Null),
        answer: watch::Sender::new(None),
    };
    sessions.insert(code.clone(), mailbox);
    let created = json!({
        "code": code, "hostToken": token, "round": 1,
        "expiresAt": "2026-12-05T00:00:00Z", "iceServers": [],
    });
    (StatusCode::CREATED, Json(created))
}

async fn read(
    State(sessions): State<Sessions>,
    Path(code): Path<String>,
) -> Result<Json<Value>, StatusCode> {
    let s = sessions.get(&code).ok_or(StatusCode::NOT_FOUND)?;
    Ok(Json(json!({"code": code, "round": 1, "offer": s.offer})))
}

async fn answer(
    State(sessions): State<Sessions>,
    Path(code): Path<String>,
    Json(body): Json<Value>,
) -> StatusCode {
    match sessions.get(&code) {
        Some(s) => {
            s.answer.send_replace(Some(body));
            StatusCode::CREATED
        }
        None => StatusCode::NOT_FOUND,
    }
}

async fn poll(
    State(sessions): State<Sessions>,
    Path(code): Path<String>,
    Query(query): Query<Value>,
    headers: axum::http::HeaderMap,
) -> Result<Json<Value>, StatusCode> {
    let mut answers = {
        let s = sessions.get(&code).ok_or(StatusCode::NOT_FOUND)?;
        let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
        if bearer.and_then(|b| b.strip_prefix("Bearer ")) != Some(s.token.as_str()) {
            return Err(StatusCode::FORBIDDEN);
        }
        s.answer.subscribe()
    };
    let wait_ms = query
        .get("waitMs")
        .and_then(|v| v.as_str()?.parse().ok())
        .unwrap_or(10_000);
    let answered = answers.wait_for(Option::is_some);
    match tokio::time::timeout(Duration::from_millis(wait_ms), answered).await {
        Ok(Ok(answer)) => Ok(Json(answer.clone().unwrap_or_default())),
        _ => Err(StatusCode::NO_CONTENT),
    }
}

async fn delete(State(sessions): State<Sessions>, Path(code): Path<String>) -> StatusCode {
    match sessions.remove(&code) {
        Some(_) => StatusCode::NO_CONTENT,
        None => StatusCode::NOT_FOUND,
    }
}

fn main() -> anyhow::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18285".into());
    let app = Router::new()
        .route("/session", put(create))
        .route("/session/{code}", get(read).delete(delete))
        .route("/session/{code}/answer", get(poll).post(answer))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(Sessions::default());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            axum::serve(listener, app).await?;
            Ok(())
        })
}
