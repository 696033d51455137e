//! Helpers of the attacks: raw connections from a chosen address, invented
//! codes and cursors, a locked database, a host's own sessions.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use hyper::{Method, StatusCode};
use lobby_api::api::PutSessionResponse;
use serde_json::json;
use tokio::net::{TcpSocket, TcpStream};

use crate::client::HttpClient;
use crate::exchange::sample_sdp;

use super::*;

/// The first line of the response on `stream`, if one comes within 200 ms
/// (a refusal on loopback does; a held long-poll does not).
pub(super) async fn status_line(stream: &mut TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf[..n]);
    text.lines().next().map(str::to_owned)
}

/// The forwarded address of the `forwarded` attack (TEST-NET-2).
pub(super) const FORWARDED_CLIENT: &str = "198.51.100.7";

/// A made-up session code for cursor `n`.
pub(super) fn invented_code(n: u64) -> String {
    let alphabet = lobby_api::code::CODE_ALPHABET;
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..lobby_api::code::CODE_LEN)
        .map(|_| {
            let c = alphabet[(x % alphabet.len() as u64) as usize];
            x /= alphabet.len() as u64;
            char::from(c)
        })
        .collect()
}

/// Holds an exclusive lock on the SQLite file at `path` for `hold`, from
/// another process (Python's sqlite3, on every machine of this kind), as a
/// stuck disk or a backup tool would. Returns once the lock is gone.
pub(super) async fn lock_database(path: &std::path::Path, hold: Duration) -> anyhow::Result<()> {
    let script = "import sqlite3, sys, time\n\
                  c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)\n\
                  c.execute('BEGIN EXCLUSIVE')\n\
                  print('locked', flush=True)\n\
                  time.sleep(float(sys.argv[2]))\n\
                  c.execute('ROLLBACK')\n";
    // The locker ends on its own after `hold`.
    let (path, hold) = (path.to_owned(), hold.as_secs_f64().to_string());
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(path)
            .arg(hold)
            .stdout(std::process::Stdio::null())
            .status()
    })
    .await??;
    anyhow::ensure!(status.success(), "locking the database failed: {status}");
    Ok(())
}

/// How long past its opening a slow reader's connection may be held open
/// before the benchmark counts it as getting through: the server's default
/// write stall timeout (10 s) and a margin.
pub(super) const SLOW_READER_GRACE: Duration = Duration::from_secs(12);

/// [`open_from`] with a 4 KiB receive buffer, so the server's writes stall
/// soon.
pub(super) async fn open_with_window(server: SocketAddr) -> std::io::Result<TcpStream> {
    connect_from(server, ATTACKER, Some(4096)).await
}

/// Ends one of the attacker's sessions, so the next phase starts clean.
pub(super) async fn delete_own(client: &HttpClient, server: &str, code: &str, token: &str) {
    let _ = client
        .send(
            Method::DELETE,
            &format!("{server}/session/{code}"),
            None,
            Some(token),
        )
        .await;
}

/// A session of the attacker's own, public, with a maximum-size offer when
/// `meta_bytes` > 0 (and that much metadata).
pub(super) async fn create_own(
    client: &HttpClient,
    server: &str,
    meta_bytes: usize,
) -> Option<(String, String)> {
    let offer = if meta_bytes > 0 {
        let mut sdp = sample_sdp();
        while sdp.len() < 31 * 1024 {
            sdp.push_str(
                "a=x-pad:0123456789012345678901234567890123456789012345678901234567890123\r\n",
            );
        }
        sdp
    } else {
        sample_sdp()
    };
    let mut body = json!({
        "name": "attacker", "hostName": "attacker", "maxPlayers": 4, "build": "attack",
        "hostKind": "player", "offer": offer,
    });
    if meta_bytes > 0 {
        body["meta"] = json!({"pad": "x".repeat(meta_bytes - 20)});
    }
    let reply = client
        .send(
            Method::PUT,
            &format!("{server}/session"),
            serde_json::to_vec(&body).ok(),
            None,
        )
        .await
        .ok()?;
    if reply.status != StatusCode::CREATED {
        return None;
    }
    let created: PutSessionResponse = serde_json::from_slice(&reply.body).ok()?;
    Some((created.code.to_string(), created.host_token?))
}

/// A TCP connection to the server from the attacker's address.
pub(super) async fn open_from(server: SocketAddr) -> std::io::Result<TcpStream> {
    connect_from(server, ATTACKER, None).await
}

/// A TCP connection to the server from `source`, with a receive buffer of
/// `recv_buffer` bytes when given; at most 2 s to connect.
pub(super) async fn connect_from(
    server: SocketAddr,
    source: Ipv4Addr,
    recv_buffer: Option<u32>,
) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    if let Some(bytes) = recv_buffer {
        socket.set_recv_buffer_size(bytes)?;
    }
    socket.bind(SocketAddr::new(IpAddr::V4(source), 0))?;
    tokio::time::timeout(Duration::from_secs(2), socket.connect(server))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
}

/// Whether the server has not closed `stream` (nothing to read, no EOF).
pub(super) fn still_open(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match stream.try_read(&mut buf) {
            Ok(0) => return false,
            // A refusal (503, 429) or event data: drain and look again.
            Ok(_) => {
                if buf.starts_with(b"HTTP/1.1 4") || buf.starts_with(b"HTTP/1.1 5") {
                    return false;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

/// A distinct string of `len` letters for counter `n`.
pub(super) fn invented(n: u64, len: usize) -> String {
    let mut s = String::with_capacity(len);
    let mut x = n;
    for _ in 0..len {
        s.push(char::from(b'A' + (x % 26) as u8));
        x = x / 26 + n.wrapping_mul(2_654_435_761) % 7;
    }
    s
}
