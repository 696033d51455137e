//! The exchange workload: pairs of a host and a joiner going through
//! create, read offer, answer and receive answer, then the host deletes the
//! session. Hosts and joiners are spread over the given servers (a host on
//! server i, its joiner on server i+1), which exercises cross-replica
//! wake-ups when there are several.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper::Method;
use lobby_api::api::PutSessionResponse;
use serde_json::json;

use crate::client::HttpClient;
use crate::stats::{Op, Recorder};

/// A data-channel offer of realistic size (about 1 KB, like a non-trickle
/// offer with two host candidates).
pub fn sample_sdp() -> String {
    sample_sdp_of(0)
}

/// [`sample_sdp`] with more host candidates until it holds at least
/// `bytes` bytes (a browser on a machine with several interfaces and
/// address families sends about 3 KB).
pub fn sample_sdp_of(bytes: usize) -> String {
    let mut sdp = String::from(
        "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n\
         a=extmap-allow-mixed\r\na=msid-semantic: WMS\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n\
         c=IN IP4 0.0.0.0\r\na=ice-ufrag:Wq1v\r\na=ice-pwd:0cPIHeJ8hQ3Ym7GmNn7bXyQe\r\na=ice-options:trickle\r\n\
         a=fingerprint:sha-256 6B:8B:F0:65:5F:78:E2:51:3B:AC:6F:F3:3F:46:1B:35:DC:B8:5F:64:1A:24:C2:43:F0:A1:58:D0:A1:2C:19:08\r\n\
         a=setup:actpass\r\na=mid:0\r\na=sctp-port:5000\r\na=max-message-size:262144\r\n",
    );
    let mut port = 50000;
    while port < 50002 || sdp.len() < bytes {
        sdp.push_str(&format!(
            "a=candidate:1 1 udp 2130706431 127.0.0.1 {port} typ host generation 0 network-id 1\r\n"
        ));
        port += 1;
    }
    sdp
}

/// Settings of one exchange run.
pub struct ExchangeRun {
    /// Server base URLs.
    pub servers: Vec<String>,
    /// Concurrent host/joiner pairs.
    pub pairs: usize,
    /// Stop after this many exchanges...
    pub max_exchanges: u64,
    /// ...or after this long, whichever comes first.
    pub max_duration: Duration,
    /// Whether the host deletes its session after the exchange (otherwise
    /// sessions live on until their TTL).
    pub delete_after: bool,
    /// A new connection for every request (otherwise keep-alive).
    pub fresh_connections: bool,
    /// The offer's and the answer's size, at least (see [`sample_sdp_of`]).
    pub sdp_bytes: usize,
}

/// Runs the workload; returns exchanges completed.
pub async fn run(
    run: ExchangeRun,
    recorder: Arc<Recorder>,
    progress: indicatif::ProgressBar,
) -> u64 {
    let client = HttpClient::new(run.pairs * 2);
    let started = Arc::new(AtomicU64::new(0));
    let completed = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + run.max_duration;
    let sdp = Arc::new(sample_sdp_of(run.sdp_bytes));
    let servers = Arc::new(run.servers);
    let mut workers = Vec::new();
    for _ in 0..run.pairs {
        let (client, started, completed, recorder, sdp, servers, progress) = (
            client.clone(),
            started.clone(),
            completed.clone(),
            recorder.clone(),
            sdp.clone(),
            servers.clone(),
            progress.clone(),
        );
        let max = run.max_exchanges;
        let delete_after = run.delete_after;
        let fresh = run.fresh_connections;
        workers.push(tokio::spawn(async move {
            loop {
                let n = started.fetch_add(1, Ordering::Relaxed);
                if n >= max || Instant::now() >= deadline {
                    break;
                }
                let host = &servers[n as usize % servers.len()];
                let joiner = &servers[(n as usize + 1) % servers.len()];
                // Fresh: the host and the joiner each open their own
                // connection and close it after the exchange, as two
                // browser tabs would.
                let (host_client, joiner_client) = if fresh {
                    (HttpClient::new(1), HttpClient::new(1))
                } else {
                    (client.clone(), client.clone())
                };
                let clients = Clients {
                    host: &host_client,
                    joiner: &joiner_client,
                };
                match one_exchange(clients, host, joiner, &sdp, &recorder, delete_after).await {
                    Ok(()) => {
                        completed.fetch_add(1, Ordering::Relaxed);
                        progress.inc(1);
                    }
                    Err(err) => recorder.error(format!("exchange: {err}")),
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    completed.load(Ordering::Relaxed)
}

async fn timed<T>(recorder: &Recorder, op: Op, fut: impl std::future::Future<Output = T>) -> T {
    let t = Instant::now();
    let out = fut.await;
    recorder.record(op, t.elapsed());
    out
}

/// Who sends the host's requests and who the joiner's.
#[derive(Clone, Copy)]
struct Clients<'a> {
    host: &'a HttpClient,
    joiner: &'a HttpClient,
}

async fn one_exchange(
    clients: Clients<'_>,
    host: &str,
    joiner: &str,
    sdp: &str,
    rec: &Recorder,
    delete_after: bool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    let body = json!({
        "name": "load test", "hostName": "loadgen", "maxPlayers": 4, "build": "load",
        "hostKind": "daemon", "offer": sdp,
    });
    let created = timed(
        rec,
        Op::Create,
        clients.host.send(
            Method::PUT,
            &format!("{host}/session"),
            Some(serde_json::to_vec(&body)?),
            None,
        ),
    )
    .await?;
    anyhow::ensure!(created.status == 201, "create answered {}", created.status);
    let created: PutSessionResponse = serde_json::from_slice(&created.body)?;
    let code = created.code.as_str();
    let token = created.host_token.unwrap_or_default();

    let poll_url = format!("{host}/session/{code}/answer?round=1&waitMs=10000");
    let host_side = timed(
        rec,
        Op::ReceiveAnswer,
        clients
            .host
            .send(Method::GET, &poll_url, None, Some(&token)),
    );
    let joiner_side = async {
        let offer = timed(
            rec,
            Op::ReadOffer,
            clients
                .joiner
                .send(Method::GET, &format!("{joiner}/session/{code}"), None, None),
        )
        .await?;
        anyhow::ensure!(offer.status == 200, "read offer answered {}", offer.status);
        let answer = json!({"round": 1, "answer": sdp, "name": "joiner"});
        let posted = timed(
            rec,
            Op::Answer,
            clients.joiner.send(
                Method::POST,
                &format!("{joiner}/session/{code}/answer"),
                Some(serde_json::to_vec(&answer)?),
                None,
            ),
        )
        .await?;
        anyhow::ensure!(posted.status == 201, "answer answered {}", posted.status);
        Ok(())
    };
    let (received, joined) = tokio::join!(host_side, joiner_side);
    joined?;
    let received = received?;
    anyhow::ensure!(
        received.status == 200,
        "receive answer answered {}",
        received.status
    );
    rec.record(Op::Exchange, start.elapsed());
    if !delete_after {
        return Ok(());
    }

    let deleted = timed(
        rec,
        Op::Delete,
        clients.host.send(
            Method::DELETE,
            &format!("{host}/session/{code}"),
            None,
            Some(&token),
        ),
    )
    .await?;
    anyhow::ensure!(deleted.status == 204, "delete answered {}", deleted.status);
    Ok(())
}
