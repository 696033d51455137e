//! The same exchange against `matchbox_server` (0.14), the peer signaling
//! server the project measures itself against: a host and a joiner each
//! open a WebSocket to a fresh room, the host is told of the joiner
//! (`NewPeer`), sends its offer through the server (`Signal`), the joiner
//! answers the same way, and both close. This is what `matchbox_socket`
//! does for one pair; the offer and answer are the same text the lobby
//! exchange carries.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::exchange::sample_sdp_of;
use crate::stats::{Op, Recorder};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How long one exchange may take before it counts as failed.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of one run against matchbox.
pub struct MatchboxRun {
    /// `ws://host:port`.
    pub server: String,
    /// Concurrent host/joiner pairs.
    pub pairs: usize,
    /// Stop after this many exchanges...
    pub max_exchanges: u64,
    /// ...or after this long, whichever comes first.
    pub max_duration: Duration,
    /// The offer's and the answer's size, at least.
    pub sdp_bytes: usize,
}

/// Runs the workload; returns exchanges completed.
pub async fn run(
    run: MatchboxRun,
    recorder: Arc<Recorder>,
    progress: indicatif::ProgressBar,
) -> u64 {
    let started = Arc::new(AtomicU64::new(0));
    let completed = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + run.max_duration;
    let sdp = Arc::new(sample_sdp_of(run.sdp_bytes));
    let server = Arc::new(run.server);
    // Rooms are named per run too, so a second run against the same
    // server never meets a room left over from the first.
    let prefix = std::process::id();
    let mut workers = Vec::new();
    for _ in 0..run.pairs {
        let (started, completed, recorder, sdp, server, progress) = (
            started.clone(),
            completed.clone(),
            recorder.clone(),
            sdp.clone(),
            server.clone(),
            progress.clone(),
        );
        let max = run.max_exchanges;
        workers.push(tokio::spawn(async move {
            loop {
                let n = started.fetch_add(1, Ordering::Relaxed);
                if n >= max || Instant::now() >= deadline {
                    break;
                }
                let room = format!("{server}/campfire-{prefix}-{n}");
                let t = Instant::now();
                match tokio::time::timeout(EXCHANGE_TIMEOUT, one_exchange(&room, &sdp)).await {
                    Ok(Ok(())) => {
                        recorder.record(Op::Exchange, t.elapsed());
                        completed.fetch_add(1, Ordering::Relaxed);
                        progress.inc(1);
                    }
                    Ok(Err(err)) => recorder.error(format!("matchbox exchange: {err}")),
                    Err(_) => recorder.error("matchbox exchange: timed out".into()),
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    completed.load(Ordering::Relaxed)
}

/// The next event the server sends, parsed (pings and the like skipped).
async fn next_event(socket: &mut Socket) -> anyhow::Result<Value> {
    while let Some(message) = socket.next().await {
        match message? {
            Message::Text(text) => return Ok(serde_json::from_str(text.as_str())?),
            Message::Close(_) => break,
            _ => {}
        }
    }
    anyhow::bail!("the server closed the socket")
}

/// Waits for an event of `kind` (`IdAssigned`, `NewPeer`, `Signal`).
async fn expect(socket: &mut Socket, kind: &str) -> anyhow::Result<Value> {
    loop {
        let mut event = next_event(socket).await?;
        if let Some(value) = event.get_mut(kind) {
            return Ok(value.take());
        }
    }
}

async fn signal(socket: &mut Socket, receiver: &Value, data: Value) -> anyhow::Result<()> {
    let request = json!({"Signal": {"receiver": receiver, "data": data}});
    socket.send(Message::text(request.to_string())).await?;
    Ok(())
}

async fn one_exchange(room: &str, sdp: &str) -> anyhow::Result<()> {
    let (mut host, _) = tokio_tungstenite::connect_async(room).await?;
    expect(&mut host, "IdAssigned").await?;
    let (mut joiner, _) = tokio_tungstenite::connect_async(room).await?;
    expect(&mut joiner, "IdAssigned").await?;
    let joiner_id = expect(&mut host, "NewPeer").await?;
    signal(&mut host, &joiner_id, json!({ "Offer": sdp })).await?;
    let offer = expect(&mut joiner, "Signal").await?;
    anyhow::ensure!(
        offer["data"]["Offer"].as_str() == Some(sdp),
        "the offer arrived changed"
    );
    signal(&mut joiner, &offer["sender"], json!({ "Answer": sdp })).await?;
    let answer = expect(&mut host, "Signal").await?;
    anyhow::ensure!(
        answer["data"]["Answer"].as_str() == Some(sdp),
        "the answer arrived changed"
    );
    let _ = joiner.close(None).await;
    let _ = host.close(None).await;
    Ok(())
}
