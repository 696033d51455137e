//! The HTTP front door: accepts connections within bounds and serves each
//! with hyper, so one client cannot hold the server's sockets or memory.
//!
//! - At most `max_connections` open connections in all and
//!   `max_connections_per_address` per client address (IPv4 address or IPv6
//!   network, as for rate limits). A connection over either cap is answered
//!   `503` with `Retry-After` at once and closed, before its request is read.
//! - Near the total cap (fewer than a sixteenth of the places free), each
//!   connection taken or turned away asks the oldest connection of the
//!   client holding the most to close ([`crate::shedding`]), so however
//!   many addresses share the door a newcomer is served.
//! - Behind a trusted proxy ([`ForwardedFor`]) one connection carries many
//!   clients, so the proxy's connections are not capped per address; each
//!   forwarded client may have `max_connections_per_address` requests in
//!   flight (a response body, such as an event stream, counts until it
//!   ends), and one over that is answered the same `503`.
//! - Request headers must arrive within `header_read_timeout` (hyper closes
//!   the connection otherwise); bodies are bounded in time by the router's
//!   body timeout and in size by its body limit. A response write that
//!   waits longer than `write_stall_timeout` on a client that reads
//!   nothing closes the connection.
//! - On shutdown the listener closes, idle connections close, requests in
//!   flight may finish, and after `shutdown_grace` whatever is still open is
//!   dropped, so a slow client cannot keep a stopping server alive (the
//!   caller then flushes the store).

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_io_timeout::TimeoutStream;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::client_addr::{ClientAddr, ClientKeys, ForwardedFor};
use crate::config::Config;
use crate::shedding::OpenConnections;
use crate::slots::{Slot, Slots};

/// What the front door allows.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Open connections in all.
    pub max_connections: usize,
    /// Open connections per client address.
    pub max_connections_per_address: usize,
    /// Time a client has to send a request's headers.
    pub header_read_timeout: Duration,
    /// Time a response write may wait on a client that reads nothing.
    pub write_stall_timeout: Duration,
    /// Whose `X-Forwarded-For` names the client.
    pub forwarded_for: ForwardedFor,
    /// How client addresses are grouped.
    pub client_keys: ClientKeys,
    /// Time requests in flight get after shutdown begins.
    pub shutdown_grace: Duration,
}

impl ConnectionLimits {
    /// What `config` allows at the front door (connections, header
    /// timeout, drain).
    pub fn from_config(config: &Config) -> Self {
        ConnectionLimits {
            max_connections: config.max_connections,
            max_connections_per_address: if config.disable_rate_limits {
                config.max_connections
            } else {
                config.max_connections_per_address
            },
            header_read_timeout: Duration::from_millis(config.header_timeout_ms.max(1)),
            write_stall_timeout: Duration::from_millis(config.write_stall_timeout_ms.max(1)),
            forwarded_for: config.forwarded_for(),
            client_keys: config.client_keys(),
            shutdown_grace: Duration::from_millis(config.shutdown_grace_ms),
        }
    }
}

/// The body of a `503` to a client over a cap.
const OVER_CAPACITY_BODY: &str =
    r#"{"error":"unavailable","message":"too many connections; retry shortly"}"#;

/// The answer to a connection over a cap: sent before reading anything.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: 71\r\nConnection: close\r\n\r\n{\"error\":\"unavailable\",\"message\":\"too many connections; retry shortly\"}";

/// Pause after a failed accept (for example out of file descriptors), so
/// the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Why a connection was turned away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The server holds `max_connections`.
    Total,
    /// The client's address holds `max_connections_per_address`.
    PerAddress,
    /// A forwarded client has `max_connections_per_address` requests in
    /// flight through a trusted proxy.
    ForwardedClient,
}

/// Serves `app` on `listener` until `shutdown` completes, then drains for
/// at most `limits.shutdown_grace`. `on_refused` hears of every connection
/// turned away (for metrics).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
    on_refused: impl Fn(Refusal) + Send + Sync + 'static,
) {
    let max = limits.max_connections.max(1);
    let total = Arc::new(Semaphore::new(max));
    // Below this many free places, connections are shed.
    let reserve = (max / 16).max(1);
    let open = Arc::new(OpenConnections::default());
    let per_address: Slots<IpAddr> = Slots::default();
    let keys = limits.client_keys;
    let front = Arc::new(FrontDoor {
        forwarded_for: limits.forwarded_for.clone(),
        keys,
        per_client: Slots::default(),
        max_per_client: limits.max_connections_per_address,
        on_refused: Box::new(on_refused),
    });
    let stop = CancellationToken::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = total.clone().try_acquire_owned() else {
            // Room for the retry.
            open.shed_one(reserve);
            refuse(stream);
            (front.on_refused)(Refusal::Total);
            continue;
        };
        // A trusted proxy's connection carries many clients: they are
        // capped per request instead (see `FrontDoor::call`), and its
        // connections are not shed.
        let (slot, registered) = if front.forwarded_for.is_trusted_proxy(peer.ip()) {
            (None, None)
        } else {
            let client = keys.key(peer.ip());
            let Some(slot) = per_address.try_take(client, limits.max_connections_per_address)
            else {
                refuse(stream);
                (front.on_refused)(Refusal::PerAddress);
                continue;
            };
            (Some(slot), Some(open.register(client)))
        };
        if total.available_permits() < reserve {
            open.shed_one(reserve);
        }
        let mut io = TimeoutStream::new(stream);
        io.set_write_timeout(Some(limits.write_stall_timeout));
        let conn = http.serve_connection(
            TokioIo::new(Box::pin(io)),
            service(app.clone(), peer, front.clone()),
        );
        let stop = stop.clone();
        // Holds its places under the caps until it ends. Asked to close
        // (shed, or the server stopping), it closes at once when idle and
        // after the response in flight otherwise.
        tokio::spawn(async move {
            let _places = (permit, slot);
            tokio::pin!(conn);
            let asked = async {
                match &registered {
                    Some(r) => r.asked_to_close().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // Errors here are the client's (reset, timeout, malformed request).
                _ = conn.as_mut() => return,
                () = asked => {}
                () = stop.cancelled() => {}
            }
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        });
    }
    drop(listener);
    stop.cancel();
    let open_now = max - total.available_permits();
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    tokio::select! {
        // Every connection gives its place back when it ends.
        _ = total.acquire_many(all) => {}
        () = tokio::time::sleep(limits.shutdown_grace) => {
            tracing::warn!(
                open = open_now,
                grace_ms = limits.shutdown_grace.as_millis() as u64,
                "connections still open after the shutdown grace: dropping them"
            );
        }
    }
}

/// What every connection's requests share: who the client is, and the
/// requests in flight per forwarded client.
struct FrontDoor {
    forwarded_for: ForwardedFor,
    keys: ClientKeys,
    per_client: Slots<IpAddr>,
    max_per_client: usize,
    on_refused: Box<dyn Fn(Refusal) + Send + Sync>,
}

/// The router for one connection, with its peer address and the request's
/// client address for extractors.
fn service(
    app: Router,
    peer: SocketAddr,
    front: Arc<FrontDoor>,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = axum::response::Response,
    Error = Infallible,
    Future = impl Future<Output = Result<axum::response::Response, Infallible>> + Send,
> + Clone {
    let proxied = front.forwarded_for.is_trusted_proxy(peer.ip());
    hyper::service::service_fn(move |mut req: Request<Incoming>| {
        let client = front.forwarded_for.client(peer.ip(), req.headers());
        req.extensions_mut().insert(ConnectInfo(peer));
        req.extensions_mut().insert(ClientAddr(client));
        // Through a trusted proxy: one place per request in flight, held
        // until its response body ends.
        let slot = if proxied {
            match front
                .per_client
                .try_take(front.keys.key(client), front.max_per_client)
            {
                Some(slot) => Some(slot),
                None => {
                    (front.on_refused)(Refusal::ForwardedClient);
                    return futures_util::future::Either::Left(std::future::ready(Ok(
                        over_capacity(),
                    )));
                }
            }
        } else {
            None
        };
        let app = app.clone();
        futures_util::future::Either::Right(async move {
            let response = app.oneshot(req.map(Body::new)).await?;
            Ok(match slot {
                Some(slot) => response.map(|body| Body::new(HeldBody { body, _slot: slot })),
                None => response,
            })
        })
    })
}

/// The `503` for a forwarded client over its cap, as a response. It
/// closes the proxy's connection: a client refused again and again cannot
/// pile up the proxy's idle connections toward `max_connections` (the
/// proxy opens a new one for its next request).
fn over_capacity() -> axum::response::Response {
    axum::response::Response::builder()
        .status(axum::http::StatusCode::SERVICE_UNAVAILABLE)
        .header(axum::http::header::CONNECTION, "close")
        .header(axum::http::header::RETRY_AFTER, "1")
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(OVER_CAPACITY_BODY))
        .unwrap_or_default()
}

/// A response body that holds its client's place until it ends (or is
/// dropped with its connection).
struct HeldBody {
    body: Body,
    _slot: Slot<IpAddr>,
}

impl http_body::Body for HeldBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Answers 503 without reading the request, and closes.
fn refuse(stream: TcpStream) {
    // Best effort: a full socket buffer just means a plain close.
    let _ = stream.try_write(OVER_CAPACITY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_capacity_answer_is_well_formed() {
        let text = std::str::from_utf8(OVER_CAPACITY).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        let declared: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|n| n.parse().ok())
            .expect("a length");
        assert_eq!(declared, body.len());
        let json: serde_json::Value = serde_json::from_str(body).expect("JSON body");
        assert_eq!(json["error"], "unavailable");
        assert_eq!(body, OVER_CAPACITY_BODY);
    }
}
