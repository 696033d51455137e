//! The front door behind a proxy and in front of clients that read
//! nothing: forwarded clients capped one by one (not the proxy), forwarded
//! addresses taken only from trusted proxies, `/metrics` kept to allowed
//! clients, stalled writes and event streams that end. Loopback only
//! (sources 127.0.0.x); every wait is bounded.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use common::{TestServer, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// A connection to the server from the loopback address `source`.
async fn connect_from(srv: &TestServer, source: [u8; 4]) -> TcpStream {
    connect_with(srv, source, None).await
}

async fn connect_with(srv: &TestServer, source: [u8; 4], recv_buffer: Option<u32>) -> TcpStream {
    let server: SocketAddr = srv.base.trim_start_matches("http://").parse().unwrap();
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::from((IpAddr::from(source), 0)))
        .unwrap();
    if let Some(bytes) = recv_buffer {
        socket.set_recv_buffer_size(bytes).unwrap();
    }
    socket.connect(server).await.expect("connect")
}

/// Sends a GET with an optional `X-Forwarded-For` and returns the status
/// code once the response head has arrived; the connection stays open
/// (an event stream keeps going).
async fn send_get(stream: &mut TcpStream, path: &str, forwarded: Option<&str>) -> Option<u16> {
    let xff = forwarded
        .map(|a| format!("X-Forwarded-For: {a}\r\n"))
        .unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{xff}\r\n");
    stream.write_all(req.as_bytes()).await.ok()?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(Duration::from_secs(5), async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Some(())
    })
    .await
    .ok()??;
    let text = String::from_utf8_lossy(&head);
    text.split(' ').nth(1)?.parse().ok()
}

/// One request on a fresh connection from `source`: its status.
async fn status_from(
    srv: &TestServer,
    source: [u8; 4],
    path: &str,
    forwarded: Option<&str>,
) -> Option<u16> {
    let mut s = connect_from(srv, source).await;
    send_get(&mut s, path, forwarded).await
}

/// Asks until the status is `want` (a place freed by another task), for at
/// most `within`; panics naming `what` otherwise.
async fn eventually_status(
    srv: &TestServer,
    source: [u8; 4],
    path: &str,
    forwarded: Option<&str>,
    want: u16,
    within: Duration,
    what: &str,
) {
    eventually(within, what, || async {
        match status_from(srv, source, path, forwarded).await {
            Some(status) if status == want => Ok(()),
            other => Err(other),
        }
    })
    .await;
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_is_capped_not_the_proxy() {
    let srv = TestServer::start_rate_limited(|c| {
        c.trust_forwarded_for = true;
        c.max_connections_per_address = 4;
        c.max_event_streams_per_address = 100;
    })
    .await;
    // One forwarded client holds four event streams through the proxy
    // (127.0.0.1, trusted by default): its whole allowance.
    let mut streams = Vec::new();
    for _ in 0..4 {
        let mut s = connect_from(&srv, [127, 0, 0, 1]).await;
        let status = send_get(&mut s, "/lobby/events", Some("203.0.113.5")).await;
        assert_eq!(status, Some(200), "a stream within the client's allowance");
        streams.push(s);
    }
    // A fifth request of the same client is refused, and only that client;
    // the refusal closes the proxy's connection, so a client refused again
    // and again cannot pile up idle proxy connections toward the total cap.
    let mut refused = connect_from(&srv, [127, 0, 0, 1]).await;
    assert_eq!(
        send_get(&mut refused, "/lobby/events", Some("203.0.113.5")).await,
        Some(503),
        "the forwarded client over its cap"
    );
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), refused.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(_))),
        "the refused request's connection is closed: {closed:?}"
    );
    assert_eq!(
        status_from(&srv, [127, 0, 0, 1], "/healthz", Some("198.51.100.7")).await,
        Some(200),
        "another forwarded client through the same proxy is served"
    );
    assert_eq!(
        status_from(&srv, [127, 0, 0, 1], "/healthz", None).await,
        Some(200),
        "the proxy's own health check is served"
    );
    // Many more clients through the proxy than the per-address cap.
    for i in 0..16u8 {
        let client = format!("198.51.100.{}", 10 + i);
        let mut s = connect_from(&srv, [127, 0, 0, 1]).await;
        assert_eq!(
            send_get(&mut s, "/lobby/events", Some(&client)).await,
            Some(200),
            "client {client}"
        );
        streams.push(s);
    }
    // A stream that ends gives its place back.
    drop(streams.remove(0));
    eventually_status(
        &srv,
        [127, 0, 0, 1],
        "/healthz",
        Some("203.0.113.5"),
        200,
        Duration::from_secs(5),
        "a stream that ends gives its place back",
    )
    .await;
}

#[tokio::test]
async fn a_peer_outside_the_trusted_proxies_is_its_own_client_whatever_it_forwards() {
    let srv = TestServer::start_rate_limited(|c| {
        c.trust_forwarded_for = true;
        c.trusted_proxies = vec!["127.0.0.2/32".parse().unwrap()];
        c.max_event_streams_per_address = 2;
    })
    .await;
    let mut held = Vec::new();
    for client in ["203.0.113.1", "203.0.113.2"] {
        let mut s = connect_from(&srv, [127, 0, 0, 3]).await;
        assert_eq!(
            send_get(&mut s, "/lobby/events", Some(client)).await,
            Some(200)
        );
        held.push(s);
    }
    // Keyed on 127.0.0.3, not on the address it claims: over the cap.
    assert_eq!(
        status_from(&srv, [127, 0, 0, 3], "/lobby/events", Some("203.0.113.3")).await,
        Some(429)
    );
    // The trusted proxy's forwarded clients are still told apart.
    let mut s = connect_from(&srv, [127, 0, 0, 2]).await;
    assert_eq!(
        send_get(&mut s, "/lobby/events", Some("203.0.113.3")).await,
        Some(200)
    );
}

#[tokio::test]
async fn metrics_answer_only_allowed_clients() {
    let srv = TestServer::start_with(|c| {
        c.trust_forwarded_for = true;
    })
    .await;
    assert_eq!(
        status_from(&srv, [127, 0, 0, 1], "/metrics", None).await,
        Some(200),
        "loopback, directly"
    );
    assert_eq!(
        status_from(&srv, [127, 0, 0, 1], "/metrics", Some("10.1.2.3")).await,
        Some(200),
        "a private client through the proxy"
    );
    assert_eq!(
        status_from(&srv, [127, 0, 0, 1], "/metrics", Some("203.0.113.5")).await,
        Some(404),
        "a public client through the proxy"
    );
    let srv = TestServer::start_with(|c| {
        c.metrics_allow = vec!["10.0.0.0/8".parse().unwrap()];
    })
    .await;
    assert_eq!(
        status_from(&srv, [127, 0, 0, 1], "/metrics", None).await,
        Some(404),
        "loopback is not in the list"
    );
}

#[tokio::test]
async fn a_client_that_never_reads_loses_its_connections_after_the_write_stall_timeout() {
    let srv = TestServer::start_rate_limited(|c| {
        c.max_connections_per_address = 4;
        c.write_stall_timeout_ms = 300;
        // Only the write stall timeout may close these connections.
        c.header_timeout_ms = 60_000;
    })
    .await;
    // Four connections pipeline far more than they read (nothing), with a
    // small receive window, and keep sending requests: the server's writes
    // stall while its header reads keep succeeding.
    // The OpenAPI document: tens of kilobytes a response.
    let request = "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut s = connect_with(&srv, [127, 0, 0, 1], Some(4096)).await;
        s.write_all(request.repeat(400).as_bytes())
            .await
            .expect("pipeline");
        stalled.push(tokio::spawn(async move {
            // Bounded: at most 20 s, then the socket is dropped.
            for _ in 0..100 {
                if s.write_all(request.as_bytes()).await.is_err() {
                    return true;
                }
                // Pacing: a request every 200 ms keeps its header reads busy.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            false
        }));
    }
    // The stalled connections are closed by the server, so the address
    // gets its places back while the sockets are still held here.
    eventually_status(
        &srv,
        [127, 0, 0, 1],
        "/healthz",
        None,
        200,
        Duration::from_secs(15),
        "a client reading nothing does not hold its connections",
    )
    .await;
    for task in stalled {
        task.abort();
    }
}

#[tokio::test]
async fn an_event_stream_ends_after_its_lifetime() {
    let srv = TestServer::start_with(|c| {
        c.event_stream_max_secs = 1;
    })
    .await;
    let opened = std::time::Instant::now();
    let res = srv.lobby_events("").await;
    assert_eq!(res.status(), 200);
    let body = tokio::time::timeout(Duration::from_secs(10), res.bytes()).await;
    assert!(
        matches!(body, Ok(Ok(_))),
        "the stream ends by itself: {body:?}"
    );
    // At its lifetime, not at once.
    assert!(
        opened.elapsed() >= Duration::from_millis(900),
        "the stream ended after {:?}, before its 1 s lifetime",
        opened.elapsed()
    );
}
