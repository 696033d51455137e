//! Real WebRTC over loopback, signaled through the real lobby server.
//!
//! Network safety: every socket here is bound to 127.0.0.1 (the lobby on
//! 127.0.0.1:0, every endpoint's one UDP socket on 127.0.0.1:0, no
//! STUN/TURN), and every wait is bounded.

use std::net::SocketAddrV4;
use std::time::Duration;

use host_daemon::lobby_client::{LobbyClient, SignalingError};
use host_daemon::transport::webrtc::{
    Endpoint, GuestAnswer, OpenOffer, WebRtcLink, WebRtcOptions, WebRtcReceiver, WebRtcSender,
};
use host_daemon::transport::{
    ConnectionState, Payload, PeerEvent, PeerReceiver, PeerSender, TransportError,
};
use lobby_server::{Application, Config};
use protocol::api::{HostKind, PutSessionRequest};
use protocol::peer::Channel;
use tokio::sync::oneshot;
use tokio::time::timeout;

/// The two tests share the process's fd table; run them one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MESSAGES: usize = 100;
const CHUNK: usize = 16 * 1024;
const BIG: usize = 200 * 1024;
const STEP: Duration = Duration::from_secs(20);

struct Lobby {
    base: String,
    stop: Option<oneshot::Sender<()>>,
    handle: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

impl Lobby {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("lobby.db").display());
        let mut config = Config::for_tests(url);
        config.disable_rate_limits = true;
        assert!(config.listen.ip().is_loopback());
        let app = Application::build(config).await.expect("lobby builds");
        let base = format!("http://{}", app.local_addr());
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(app.run_until_stopped(async move {
            let _ = rx.await;
        }));
        Lobby {
            base,
            stop: Some(tx),
            handle,
            _dir: dir,
        }
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = timeout(Duration::from_secs(10), &mut self.handle).await;
    }
}

fn loopback() -> WebRtcOptions {
    WebRtcOptions {
        connect_timeout: Duration::from_secs(15),
        ..WebRtcOptions::default()
    }
}

fn assert_loopback_only(sdp: &str) {
    let candidates: Vec<&str> = sdp
        .lines()
        .filter(|l| l.starts_with("a=candidate:"))
        .collect();
    assert!(!candidates.is_empty(), "no candidates in\n{sdp}");
    for c in candidates {
        assert_eq!(
            c.split(' ').nth(4),
            Some("127.0.0.1"),
            "non-loopback candidate {c}"
        );
    }
}

/// The next event, bounded.
async fn next_event(receiver: &mut WebRtcReceiver) -> Option<PeerEvent> {
    timeout(STEP, receiver.recv())
        .await
        .expect("an event within the bound")
}

fn payload(tag: &str) -> String {
    (0..BIG)
        .map(|i| char::from(b'a' + ((i + tag.len()) % 26) as u8))
        .collect()
}

/// Sends 100 messages on each channel (binary on `input`, text on
/// `reconciliation`), then a 200 KiB payload as 16 KiB chunks on
/// `reconciliation`.
async fn send_all(sender: &WebRtcSender, tag: &str) {
    for i in 0..MESSAGES {
        sender
            .send(
                Channel::Input,
                Payload::Binary(format!("{tag}-input-{i}").into_bytes()),
            )
            .await
            .expect("send input");
        sender
            .send(Channel::Reconciliation, format!("{tag}-recon-{i}").into())
            .await
            .expect("send reconciliation");
    }
    let big = payload(tag);
    for chunk in big.as_bytes().chunks(CHUNK) {
        let chunk = std::str::from_utf8(chunk).expect("ascii").to_owned();
        sender
            .send(Channel::Reconciliation, chunk.into())
            .await
            .expect("send chunk");
    }
}

/// Receives what [`send_all`] sent, checking order per channel.
async fn receive_all(receiver: &mut WebRtcReceiver, tag: &str) {
    let mut inputs = 0;
    let mut recons = 0;
    let mut big = String::new();
    let chunks = BIG.div_ceil(CHUNK);
    let mut chunks_seen = 0;
    while inputs < MESSAGES || recons < MESSAGES || chunks_seen < chunks {
        match next_event(receiver).await {
            Some(PeerEvent::Message(Channel::Input, text)) => {
                let want = format!("{tag}-input-{inputs}").into_bytes();
                assert_eq!(text, Payload::Binary(want), "binary stays binary");
                inputs += 1;
            }
            Some(PeerEvent::Message(Channel::Reconciliation, text)) => {
                if recons < MESSAGES {
                    assert_eq!(text, Payload::from(format!("{tag}-recon-{recons}")));
                    recons += 1;
                } else {
                    let Payload::Text(text) = text else {
                        panic!("a text chunk came as binary");
                    };
                    assert!(text.len() <= CHUNK);
                    big.push_str(&text);
                    chunks_seen += 1;
                }
            }
            Some(PeerEvent::State(ConnectionState::Connected)) => {}
            other => panic!("unexpected {other:?} ({inputs} inputs, {recons} recons)"),
        }
    }
    assert_eq!(big, payload(tag), "the chunked payload arrived intact");
}

/// After the other side closed: the link reports the loss, then ends.
async fn expect_closed_by_peer(receiver: &mut WebRtcReceiver) {
    loop {
        match next_event(receiver).await {
            Some(PeerEvent::State(
                ConnectionState::Closed | ConnectionState::Disconnected | ConnectionState::Failed,
            )) => break,
            Some(PeerEvent::State(ConnectionState::Connected)) => {}
            other => panic!("expected the close, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_and_guest_connect_through_the_lobby_and_exchange_in_order() {
    let _serial = SERIAL.lock().await;
    let lobby = Lobby::start().await;
    let opts = loopback();

    // Host: a complete offer, published as round 1 of a new session.
    let host_endpoint = Endpoint::bind(&opts).await.expect("host endpoint");
    let offer = OpenOffer::new(&host_endpoint).await.expect("host offer");
    assert_loopback_only(offer.offer_sdp());
    let host_lobby = LobbyClient::new(&lobby.base).expect("client");
    let session = host_lobby
        .create_session(&PutSessionRequest {
            offer: Some(offer.offer_sdp().to_owned()),
            name: Some("loopback".into()),
            host_name: Some("daemon".into()),
            max_players: Some(4),
            build: Some(protocol::BUILD_VERSION.into()),
            host_kind: Some(HostKind::Daemon),
            ..Default::default()
        })
        .await
        .expect("session created");
    let round = session.round.expect("round 1 open");

    // Guest: reads the offer through the lobby, answers, connects.
    let guest_task = {
        let base = lobby.base.clone();
        let code = session.code.clone();
        let opts = opts.clone();
        tokio::spawn(async move {
            let lobby = LobbyClient::new(&base).expect("client");
            let view = lobby.get_session(&code).await.expect("session");
            let (round, offer) = (view.round.expect("open round"), view.offer.expect("offer"));
            let endpoint = Endpoint::bind(&opts).await.expect("guest endpoint");
            let answer = GuestAnswer::new(&endpoint, &offer)
                .await
                .expect("guest answer");
            assert_loopback_only(answer.answer_sdp());
            lobby
                .post_answer(
                    &code,
                    round,
                    answer.answer_sdp().to_owned(),
                    Some("bot".into()),
                )
                .await
                .expect("answer accepted");
            answer.connect().await.expect("guest connected")
        })
    };

    let answer = host_lobby
        .await_answer(
            &session,
            round,
            Duration::from_secs(20),
            Duration::from_secs(5),
        )
        .await
        .expect("answer poll")
        .expect("answered in time");
    assert_eq!(answer.name, "bot");
    let host = timeout(STEP, offer.accept(&answer.answer))
        .await
        .expect("bounded")
        .expect("host connected");
    let guest = timeout(STEP, guest_task)
        .await
        .expect("bounded")
        .expect("guest task");

    // The round is taken: a second joiner finds no open round.
    let late = LobbyClient::new(&lobby.base).expect("client");
    let view = late.get_session(&session.code).await.expect("session");
    assert_eq!((view.round, view.offer), (None, None));

    let WebRtcLink {
        sender: host_tx,
        receiver: mut host_rx,
        origin: guest_origin,
    } = host;
    let WebRtcLink {
        sender: guest_tx,
        receiver: mut guest_rx,
        ..
    } = guest;
    // The host knows where its guest is: the address that answered its
    // checks (a relay weighs each address's seats by it).
    assert_eq!(
        guest_origin,
        Some(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    );

    // Both ends start connected.
    assert_eq!(
        next_event(&mut host_rx).await,
        Some(PeerEvent::State(ConnectionState::Connected))
    );
    assert_eq!(
        next_event(&mut guest_rx).await,
        Some(PeerEvent::State(ConnectionState::Connected))
    );

    // Too large a message is refused, not sent.
    assert_eq!(
        host_tx
            .send(Channel::Reconciliation, "x".repeat(70 * 1024).into())
            .await,
        Err(TransportError::NotOpen("reconciliation"))
    );

    // Both directions at once, both channels, in order.
    timeout(Duration::from_secs(60), async {
        tokio::join!(
            send_all(&host_tx, "down"),
            receive_all(&mut host_rx, "up"),
            send_all(&guest_tx, "up"),
            receive_all(&mut guest_rx, "down"),
        )
    })
    .await
    .expect("the exchange completes in time");

    // The host closes: the guest sees the loss, the host's receiver ends.
    timeout(STEP, host_tx.close_and_wait())
        .await
        .expect("close is bounded");
    expect_closed_by_peer(&mut guest_rx).await;
    assert_eq!(next_event(&mut guest_rx).await, None);
    assert_eq!(next_event(&mut host_rx).await, None);
    assert!(matches!(
        host_tx.send(Channel::Input, "late".into()).await,
        Err(TransportError::NotOpen("input"))
    ));
    timeout(STEP, guest_tx.close_and_wait())
        .await
        .expect("close is bounded");

    // The host stops publishing and ends the session.
    host_lobby
        .set_public(&session, false)
        .await
        .expect("unlisted");
    host_lobby.delete(&session).await.expect("deleted");
    assert!(matches!(
        late.get_session(&session.code).await,
        Err(SignalingError::NoSuchSession(_))
    ));
    lobby.stop().await;
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Host and guest ends of one connection, signaled in-process (no lobby).
async fn connect_pair(opts: &WebRtcOptions) -> (WebRtcLink, WebRtcLink) {
    let host = Endpoint::bind(opts).await.expect("host endpoint");
    let guest = Endpoint::bind(opts).await.expect("guest endpoint");
    connect_on(&host, &guest).await
}

/// Host and guest ends of one connection between two endpoints.
async fn connect_on(host: &Endpoint, guest: &Endpoint) -> (WebRtcLink, WebRtcLink) {
    let offer = OpenOffer::new(host).await.expect("offer");
    let answer = GuestAnswer::new(guest, offer.offer_sdp())
        .await
        .expect("answer");
    let answer_sdp = answer.answer_sdp().to_owned();
    let (host, guest) = timeout(STEP, async {
        tokio::join!(offer.accept(&answer_sdp), answer.connect())
    })
    .await
    .expect("bounded");
    (host.expect("host link"), guest.expect("guest link"))
}

/// One connection, signaled in-process (no lobby): connect, exchange a
/// message each way, the host closes, the guest sees it and closes too.
async fn connect_exchange_close(opts: &WebRtcOptions) {
    let (mut host, mut guest) = connect_pair(opts).await;
    host.sender
        .send(Channel::Input, "ping".into())
        .await
        .expect("ping");
    guest
        .sender
        .send(Channel::Reconciliation, "pong".into())
        .await
        .expect("pong");
    for (rx, want) in [(&mut guest.receiver, "ping"), (&mut host.receiver, "pong")] {
        loop {
            match next_event(rx).await {
                Some(PeerEvent::Message(_, text)) => {
                    assert_eq!(text, Payload::from(want));
                    break;
                }
                Some(PeerEvent::State(ConnectionState::Connected)) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    timeout(STEP, host.sender.close_and_wait())
        .await
        .expect("close is bounded");
    expect_closed_by_peer(&mut guest.receiver).await;
    timeout(STEP, guest.sender.close_and_wait())
        .await
        .expect("close is bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_connections_leave_no_sockets_or_tasks_behind() {
    let _serial = SERIAL.lock().await;
    let opts = loopback();
    // Warm up (lazily created runtime resources), then measure.
    connect_exchange_close(&opts).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let fds_before = open_fds();
    let tasks_before = metrics.num_alive_tasks();

    // 20 connections, 4 at a time.
    for _ in 0..5 {
        let batch: Vec<_> = (0..4)
            .map(|_| {
                let opts = opts.clone();
                tokio::spawn(async move { connect_exchange_close(&opts).await })
            })
            .collect();
        for task in batch {
            timeout(Duration::from_secs(60), task)
                .await
                .expect("bounded")
                .expect("cycle succeeded");
        }
    }

    // Everything is released within a bound.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (fds, tasks) = (open_fds(), metrics.num_alive_tasks());
        if fds <= fds_before && tasks <= tasks_before {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "leak: {fds} fds (before {fds_before}), {tasks} tasks (before {tasks_before})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A minimal data-channel SDP that passes the lobby's check.
const FAKE_SDP: &str = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sctp-port:5000\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lobby_refusals_are_typed_errors() {
    let _serial = SERIAL.lock().await;
    let lobby = Lobby::start().await;
    let client = LobbyClient::new(&lobby.base).expect("client");
    let session = client
        .create_session(&PutSessionRequest {
            name: Some("errors".into()),
            host_name: Some("daemon".into()),
            max_players: Some(4),
            build: Some(protocol::BUILD_VERSION.into()),
            host_kind: Some(HostKind::Daemon),
            ..Default::default()
        })
        .await
        .expect("created");
    // No round yet: full or started, as far as a joiner can tell.
    let view = client.get_session(&session.code).await.expect("session");
    assert_eq!(view.round, None);
    let round = client
        .publish_round(&session, FAKE_SDP.into())
        .await
        .expect("round");
    assert_eq!(
        client.refresh(&session).await.expect("refresh").round,
        Some(round)
    );
    assert_eq!(
        client
            .wait_answer(&session, round, Duration::from_millis(50))
            .await
            .expect("poll"),
        None
    );
    client
        .post_answer(&session.code, round, FAKE_SDP.into(), None)
        .await
        .expect("first answer wins");
    assert!(matches!(
        client
            .post_answer(&session.code, round, FAKE_SDP.into(), None)
            .await,
        Err(SignalingError::RoundTaken { .. })
    ));
    assert!(matches!(
        client
            .wait_answer(&session, round + 5, Duration::ZERO)
            .await,
        Err(SignalingError::NoSuchRound { .. })
    ));
    // Another session's token is rejected.
    let other = client
        .create_session(&PutSessionRequest {
            name: Some("other".into()),
            host_name: Some("daemon".into()),
            max_players: Some(2),
            build: Some(protocol::BUILD_VERSION.into()),
            host_kind: Some(HostKind::Daemon),
            ..Default::default()
        })
        .await
        .expect("created");
    let mut forged = other.clone();
    forged.code = session.code.clone();
    assert!(matches!(
        client.refresh(&forged).await,
        Err(SignalingError::Rejected(_))
    ));
    client.delete(&session).await.expect("deleted");
    assert!(matches!(
        client.refresh(&session).await,
        Err(SignalingError::NoSuchSession(_))
    ));
    assert!(matches!(
        client.get_session("ZZZZZZZZ").await,
        Err(SignalingError::NoSuchSession(_)) | Err(SignalingError::Refused { status: 400, .. })
    ));
    client.delete(&other).await.expect("deleted");
    lobby.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_netcode_session_runs_in_lockstep_over_webrtc() {
    use engine::plan::GeneratedCampaign;
    use host_daemon::driver::{Guest, Host, Observers, run_guest, run_served};
    use netcode::guest::GuestConfig;
    use netcode::host::HostConfig;
    use netcode::sim::final_hash_matches;
    use protocol::peer::EndReason;

    let _serial = SERIAL.lock().await;
    let (host_link, guest_link) = connect_pair(&loopback()).await;
    let (incoming_tx, incoming) = tokio::sync::mpsc::channel(1);
    incoming_tx.send(host_link).await.expect("queued");
    drop(incoming_tx);
    let host = tokio::spawn(run_served(
        Host::new(HostConfig {
            plan: std::sync::Arc::new(GeneratedCampaign {
                seed: 11,
                levels: 1,
            }),
            bots: 1,
            expected_guests: 1,
            max_ticks_per_level: Some(120),
            record_hashes: true,
            ..HostConfig::default()
        }),
        incoming,
        std::future::pending::<()>(),
        Observers::default(),
    ));
    let guest = tokio::spawn(run_guest(
        Guest::new(GuestConfig {
            display_name: "webrtc".into(),
            record_ticks: true,
            ..GuestConfig::default()
        }),
        guest_link,
    ));
    let host = timeout(Duration::from_secs(60), host)
        .await
        .expect("the session ends in time")
        .expect("host task");
    let guest = timeout(Duration::from_secs(30), guest)
        .await
        .expect("the guest ends in time")
        .expect("guest task");
    assert_eq!(host.ended(), Some(EndReason::HostShutdown));
    assert!(host.stats().ticks >= 120, "{} ticks", host.stats().ticks);
    assert!(
        host.stats().desyncs.is_empty(),
        "{:?}",
        host.stats().desyncs
    );
    assert!(final_hash_matches(&host, &guest));
    assert!(guest.ended().is_some());
}

/// The candidate in every offer of an endpoint is its one socket's
/// address: the port asked for, or the advertised address and port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_socket_and_the_advertised_address_shape_the_offer() {
    use host_daemon::transport::webrtc::WebRtcError;

    let _serial = SERIAL.lock().await;
    let candidates = |sdp: &str| -> Vec<(String, String)> {
        sdp.lines()
            .filter(|l| l.starts_with("a=candidate:"))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[4].to_owned(), f[5].to_owned())
            })
            .collect()
    };
    // A port that was free a moment ago.
    let held = std::net::UdpSocket::bind("127.0.0.1:0").expect("probe socket");
    let port = held.local_addr().expect("addr").port();
    let opts = WebRtcOptions {
        udp_port: port,
        ..loopback()
    };
    // Taken: a clear error.
    assert!(matches!(
        Endpoint::bind(&opts).await,
        Err(WebRtcError::Bind { .. })
    ));
    drop(held);
    let endpoint = Endpoint::bind(&opts)
        .await
        .expect("bound on the freed port");
    assert_eq!(endpoint.local_addr().port(), port);
    // Three offers, one socket: the same single candidate in each.
    let mut offers = Vec::new();
    for _ in 0..3 {
        let offer = OpenOffer::new(&endpoint).await.expect("offer");
        assert_eq!(
            candidates(offer.offer_sdp()),
            vec![("127.0.0.1".to_owned(), port.to_string())],
            "{}",
            offer.offer_sdp()
        );
        offers.push(offer);
    }
    assert_eq!(endpoint.connections(), 3);
    for offer in offers {
        offer.close().await;
    }
    assert_eq!(endpoint.connections(), 0);

    // Behind a NAT or a port mapping the advertised address and port are
    // the public ones (a documentation address: nothing is ever sent to
    // it, nobody answers).
    let mapped = Endpoint::bind(&WebRtcOptions {
        public_ip: Some("203.0.113.7".parse().expect("ip")),
        public_port: Some(31_000),
        ..loopback()
    })
    .await
    .expect("endpoint");
    let offer = OpenOffer::new(&mapped).await.expect("offer");
    let sdp = offer.offer_sdp().to_owned();
    offer.close().await;
    assert!(!sdp.contains("127.0.0.1"), "{sdp}");
    assert_eq!(
        candidates(&sdp),
        vec![("203.0.113.7".to_owned(), "31000".to_owned())],
        "{sdp}"
    );
    // A wildcard bind cannot be advertised.
    assert!(matches!(
        Endpoint::bind(&WebRtcOptions {
            bind_ip: "0.0.0.0".parse().expect("ip"),
            ..loopback()
        })
        .await,
        Err(WebRtcError::BadCandidate(_))
    ));
}

/// Eight guests, each on an endpoint of its own, connect to one host
/// endpoint: one socket carries them all, each link keeps its own order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_host_socket_serves_many_connections() {
    let _serial = SERIAL.lock().await;
    let opts = loopback();
    let host = Endpoint::bind(&opts).await.expect("host endpoint");
    let mut pairs = Vec::new();
    for _ in 0..8 {
        let guest = Endpoint::bind(&opts).await.expect("guest endpoint");
        pairs.push(connect_on(&host, &guest).await);
    }
    assert_eq!(host.connections(), 8);
    for (i, (h, _)) in pairs.iter().enumerate() {
        for n in 0..20 {
            h.sender
                .send(Channel::Input, format!("{i}:{n}").into())
                .await
                .expect("sent");
        }
    }
    for (i, (_, g)) in pairs.iter_mut().enumerate() {
        let mut n = 0;
        while n < 20 {
            match next_event(&mut g.receiver).await {
                Some(PeerEvent::Message(Channel::Input, text)) => {
                    assert_eq!(text, Payload::from(format!("{i}:{n}")));
                    n += 1;
                }
                Some(PeerEvent::State(ConnectionState::Connected)) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    for (h, g) in pairs {
        timeout(STEP, h.sender.close_and_wait())
            .await
            .expect("bounded");
        timeout(STEP, g.sender.close_and_wait())
            .await
            .expect("bounded");
    }
    assert_eq!(host.connections(), 0);
}

/// An SDP's ICE username fragment and password.
fn ice_credentials(sdp: &str) -> (String, String) {
    let attribute = |name: &str| {
        sdp.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in\n{sdp}"))
    };
    (attribute("a=ice-ufrag:"), attribute("a=ice-pwd:"))
}

/// A STUN binding request from the controlled side naming `username`
/// (`receiver:sender`), signed with `password` when there is one.
fn binding_request(username: &str, password: Option<&str>) -> Vec<u8> {
    use str0m::ice::{StunMessage, TransId};
    let provider = str0m::crypto::from_feature_flags();
    let hmac = |key: &[u8], parts: &[&[u8]]| provider.sha1_hmac_provider.sha1_hmac(key, parts);
    let request = StunMessage::binding_request(username, TransId::new(), false, 7, 1 << 24, false);
    let mut buf = vec![0; 1200];
    let n = request
        .to_bytes(password.map(str::as_bytes), &mut buf, hmac)
        .expect("encodes");
    buf.truncate(n);
    buf
}

/// Sends `text` on `input` and waits until the other side reads it.
async fn say(sender: &WebRtcSender, receiver: &mut WebRtcReceiver, text: &str) {
    sender
        .send(Channel::Input, text.into())
        .await
        .expect("sent");
    loop {
        match next_event(receiver).await {
            Some(PeerEvent::Message(Channel::Input, got)) => {
                assert_eq!(got, Payload::from(text));
                return;
            }
            Some(PeerEvent::State(ConnectionState::Connected)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// The host's offer, ICE password included, is public in the lobby. Binding
/// requests built from it (signed before the answer is in; unsigned, or
/// signed but naming a stranger, after) and datagrams from addresses never
/// proven route nothing to the connection and are never answered; the
/// joiner's own check, even from a new address, is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_requests_that_fail_their_checks_route_nothing() {
    let _serial = SERIAL.lock().await;
    let opts = loopback();
    let host = Endpoint::bind(&opts).await.expect("host endpoint");
    let guest = Endpoint::bind(&opts).await.expect("guest endpoint");
    let to = host.local_addr();
    let mut attackers = Vec::new();
    for _ in 0..8 {
        attackers.push(
            tokio::net::UdpSocket::bind("127.0.0.1:0")
                .await
                .expect("attacker socket"),
        );
    }
    let offer = OpenOffer::new(&host).await.expect("offer");
    let (host_ufrag, host_password) = ice_credentials(offer.offer_sdp());
    for a in &attackers {
        let forged = binding_request(&format!("{host_ufrag}:anyone"), Some(&host_password));
        a.send_to(&forged, to).await.expect("sent");
    }
    let answer = GuestAnswer::new(&guest, offer.offer_sdp())
        .await
        .expect("answer");
    let (guest_ufrag, _) = ice_credentials(answer.answer_sdp());
    let answer_sdp = answer.answer_sdp().to_owned();
    let (h, g) = timeout(STEP, async {
        tokio::join!(offer.accept(&answer_sdp), answer.connect())
    })
    .await
    .expect("bounded");
    let (mut h, mut g) = (h.expect("host link"), g.expect("guest link"));
    assert_eq!(host.routed_addresses(), 1, "only the joiner's address");

    let both = format!("{host_ufrag}:{guest_ufrag}");
    for a in &attackers {
        a.send_to(&binding_request(&both, None), to)
            .await
            .expect("sent");
        let stranger = binding_request(&format!("{host_ufrag}:stranger"), Some(&host_password));
        a.send_to(&stranger, to).await.expect("sent");
        a.send_to(&[22, 254, 253, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], to)
            .await
            .expect("sent");
    }
    // The joiner's own check from a new address comes after them all: once
    // it is answered, they have all been read.
    let moved = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("socket");
    moved
        .send_to(&binding_request(&both, Some(&host_password)), to)
        .await
        .expect("sent");
    let mut buf = [0u8; 1500];
    let (n, from) = timeout(STEP, moved.recv_from(&mut buf))
        .await
        .expect("the joiner's check is answered")
        .expect("received");
    assert_eq!(from, to);
    let reply = str0m::ice::StunMessage::parse(&buf[..n]).expect("a STUN reply");
    assert!(reply.is_successful_binding_response());
    assert_eq!(
        host.routed_addresses(),
        2,
        "the joiner's new address, no other"
    );
    for a in &attackers {
        assert!(a.try_recv(&mut buf).is_err(), "an attacker was answered");
    }

    say(&h.sender, &mut g.receiver, "still here").await;
    say(&g.sender, &mut h.receiver, "and here").await;
    timeout(STEP, h.sender.close_and_wait())
        .await
        .expect("bounded");
    timeout(STEP, g.sender.close_and_wait())
        .await
        .expect("bounded");
    assert_eq!(
        host.routed_addresses(),
        0,
        "a closed connection's routes go"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_vanishes_is_reported_disconnected_then_failed() {
    let _serial = SERIAL.lock().await;
    let fast = WebRtcOptions {
        ice_disconnected_timeout: Duration::from_millis(800),
        ice_failed_timeout: Duration::from_secs(3),
        ice_keepalive_interval: Duration::from_millis(200),
        ..loopback()
    };
    // The host lives on its own runtime, which is then torn down without
    // closing anything: to the guest it looks like a crashed process.
    let (offer_tx, offer_rx) = oneshot::channel::<String>();
    let (answer_tx, answer_rx) = oneshot::channel::<String>();
    let (kill_tx, kill_rx) = oneshot::channel::<()>();
    let host_opts = fast.clone();
    let host_thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("host runtime");
        let link = rt.block_on(async move {
            let endpoint = Endpoint::bind(&host_opts).await.expect("endpoint");
            let offer = OpenOffer::new(&endpoint).await.expect("offer");
            offer_tx.send(offer.offer_sdp().to_owned()).expect("sent");
            let answer = answer_rx.await.expect("answer");
            let link = offer.accept(&answer).await.expect("host link");
            link.sender
                .send(Channel::Input, "hello".into())
                .await
                .expect("hello");
            let _ = kill_rx.await;
            link
        });
        // Kill the endpoint's run loop (and its socket) first, then drop
        // the handles outside any runtime, so no close is ever sent.
        rt.shutdown_background();
        drop(link);
    });
    let offer = timeout(STEP, offer_rx)
        .await
        .expect("bounded")
        .expect("offer");
    let guest_endpoint = Endpoint::bind(&fast).await.expect("endpoint");
    let answer = GuestAnswer::new(&guest_endpoint, &offer)
        .await
        .expect("answer");
    answer_tx
        .send(answer.answer_sdp().to_owned())
        .expect("answer sent");
    let mut guest = timeout(STEP, answer.connect())
        .await
        .expect("bounded")
        .expect("guest link");
    loop {
        match next_event(&mut guest.receiver).await {
            Some(PeerEvent::Message(Channel::Input, text)) => {
                assert_eq!(text, Payload::from("hello"));
                break;
            }
            Some(PeerEvent::State(ConnectionState::Connected)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    kill_tx.send(()).expect("kill");
    host_thread.join().expect("host thread");
    let mut states = Vec::new();
    while let Some(ev) = next_event(&mut guest.receiver).await {
        match ev {
            PeerEvent::State(s) => states.push(s),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        states,
        vec![ConnectionState::Disconnected, ConnectionState::Failed],
        "the loss is reported, then the receiver ends"
    );
    assert!(guest.sender.send(Channel::Input, "x".into()).await.is_err());
    timeout(STEP, guest.sender.close_and_wait())
        .await
        .expect("close is bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_floods_is_held_back_not_buffered_and_nothing_is_lost() {
    let _serial = SERIAL.lock().await;
    let (mut host, guest) = connect_pair(&loopback()).await;
    // 4,000 messages of 1 KiB while the host reads nothing: far more than
    // the receive queue, the crate's buffers and SCTP's window together.
    const FLOOD: usize = 4_000;
    let filler = "x".repeat(1_000);
    let sender = guest.sender.clone();
    let flood = tokio::spawn(async move {
        for i in 0..FLOOD {
            let text = format!("{i:05}{filler}");
            if sender.send(Channel::Input, text.into()).await.is_err() {
                return i;
            }
        }
        FLOOD
    });
    use host_daemon::transport::webrtc::{
        MAX_MESSAGES_PER_DATAGRAM, RECEIVE_QUEUE_MESSAGES, SCTP_RECEIVE_WINDOW_BYTES,
    };
    // Full at RECEIVE_QUEUE_MESSAGES; one datagram may complete a few more,
    // or release what SCTP's window held back behind a gap.
    let cap =
        RECEIVE_QUEUE_MESSAGES + MAX_MESSAGES_PER_DATAGRAM + SCTP_RECEIVE_WINDOW_BYTES / 1_005;
    timeout(STEP, async {
        loop {
            let queued = host.receiver.queued_messages();
            assert!(queued <= cap, "{queued} messages queued");
            if queued >= RECEIVE_QUEUE_MESSAGES {
                break;
            }
            assert!(!flood.is_finished(), "the whole flood was buffered");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the queue fills within the bound");
    // Held back, not buffered elsewhere: with nobody reading, the flood
    // stays stuck however long it is given (here a fifth of a second).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!flood.is_finished(), "the flood went through unread");
    let queued = host.receiver.queued_messages();
    assert!((RECEIVE_QUEUE_MESSAGES..=cap).contains(&queued), "{queued}");
    // Reading it all: every message, in order.
    let mut next = 0;
    while next < FLOOD {
        match next_event(&mut host.receiver).await {
            Some(PeerEvent::Message(Channel::Input, text)) => {
                assert_eq!(text.as_bytes()[..5], *format!("{next:05}").as_bytes());
                assert!(host.receiver.queued_messages() <= cap);
                next += 1;
            }
            Some(PeerEvent::State(ConnectionState::Connected)) => {}
            other => panic!("unexpected {other:?} after {next} messages"),
        }
    }
    assert_eq!(
        timeout(STEP, flood).await.expect("bounded").expect("task"),
        FLOOD
    );
    timeout(STEP, host.sender.close_and_wait())
        .await
        .expect("close is bounded");
    timeout(STEP, guest.sender.close_and_wait())
        .await
        .expect("close is bounded");
}

/// Issue 24: a peer that closes one channel and floods another is still
/// capped. Closing a channel ends the link, and an ending link's messages
/// are queued without waiting (its last words must come before the
/// close); they used to be queued without any bound, and each one read
/// then added a permit to the queue for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_closes_one_channel_and_floods_another_is_still_capped() {
    let _serial = SERIAL.lock().await;
    let (mut host, guest) = connect_pair(&loopback()).await;
    const FLOOD: usize = 3_000;
    let filler = "x".repeat(500);
    let sender = guest.sender.clone();
    let soft = host_daemon::transport::webrtc::RECEIVE_QUEUE_MESSAGES
        + host_daemon::transport::webrtc::LAST_WORDS;
    // The flood is under way before the channel closes, so that more than
    // the queue and the last words are in flight however busy the machine
    // is (closing first let a loaded machine end the link before the
    // flood had sent that much, and the test could not run its check).
    let (progress, mut sent_so_far) = tokio::sync::watch::channel(0usize);
    let flood = tokio::spawn(async move {
        for i in 0..FLOOD {
            if sender
                .send(Channel::Input, format!("{i:05}{filler}").into())
                .await
                .is_err()
            {
                return i;
            }
            progress.send_replace(i + 1);
        }
        FLOOD
    });
    timeout(STEP, sent_so_far.wait_for(|n| *n > soft))
        .await
        .expect("the flood passes the queue and the last words in time")
        .expect("the flood task is alive");
    guest.sender.close_channel(Channel::Unreliable).await;
    let cap = host_daemon::transport::webrtc::RECEIVE_QUEUE_MESSAGES
        + host_daemon::transport::webrtc::LAST_WORDS
        + host_daemon::transport::webrtc::MAX_MESSAGES_PER_DATAGRAM
        + host_daemon::transport::webrtc::SCTP_RECEIVE_WINDOW_BYTES / 505;
    // Nobody reads: the flood goes through (the ending link's pumps no
    // longer wait) or stops; either way the queue stays within the cap.
    let mut most = 0;
    timeout(STEP, async {
        while !flood.is_finished() {
            most = most.max(host.receiver.queued_messages());
            assert!(most <= cap, "{most} messages queued");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the flood ends within the bound");
    let sent = flood.await.expect("flood task");
    // What got through before the flood ended is still arriving: let the
    // pumps drain it (bounded), then count.
    let settle = tokio::time::Instant::now() + Duration::from_secs(2);
    let mut last = usize::MAX;
    while tokio::time::Instant::now() < settle {
        let now = host.receiver.queued_messages();
        assert!(now <= cap, "{now} messages queued");
        if now == last {
            break;
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let queued = host.receiver.queued_messages();
    eprintln!("sent {sent}, queued {queued} (most {most}), cap {cap}");
    // The flood outran the queue and the last words together, so the
    // limits were exercised.
    assert!(
        sent > soft,
        "the flood ({sent}) must exceed the queue and the last words ({soft}) to test them"
    );
    // Reading frees room, which the rest still arriving may take: the
    // queue stays within the cap to the reported close. (The unit test
    // `an_ending_link_takes_its_last_words_and_no_more` pins the policy;
    // before issue 24 the ending link's queue had no bound.)
    let mut read = 0;
    loop {
        match timeout(STEP, host.receiver.recv()).await.expect("bounded") {
            Some(PeerEvent::Message(..)) => read += 1,
            Some(_) => {}
            None => break,
        }
        let now = host.receiver.queued_messages();
        assert!(now <= cap, "{now} messages queued after {read} read");
    }
    assert!(read <= sent, "{read} read of {sent} sent");
    eprintln!("read {read} before the close was reported");
    timeout(STEP, guest.sender.close_and_wait())
        .await
        .expect("close is bounded");
    timeout(STEP, host.sender.close_and_wait())
        .await
        .expect("close is bounded");
}

/// `datagram` as the IPv4 packet a host at `from` would send to `to`: the
/// way a stranger forges its source address (a raw socket: root).
fn forged_packet(from: SocketAddrV4, to: SocketAddrV4, datagram: &[u8]) -> Vec<u8> {
    let total = u16::try_from(28 + datagram.len()).expect("a small datagram");
    let mut packet = Vec::with_capacity(usize::from(total));
    // Version 4, 20-byte header; the kernel fills in the id and checksum.
    packet.extend_from_slice(&[0x45, 0]);
    packet.extend_from_slice(&total.to_be_bytes());
    packet.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    packet.extend_from_slice(&from.ip().octets());
    packet.extend_from_slice(&to.ip().octets());
    packet.extend_from_slice(&from.port().to_be_bytes());
    packet.extend_from_slice(&to.port().to_be_bytes());
    packet.extend_from_slice(&(total - 20).to_be_bytes());
    packet.extend_from_slice(&[0, 0]);
    packet.extend_from_slice(datagram);
    packet
}

/// A raw IPv4 socket that sends whole packets (root only).
fn raw_sender() -> socket2::Socket {
    socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::RAW,
        Some(socket2::Protocol::from(255)),
    )
    .expect(
        "a raw socket: this test forges source addresses and runs as root, as scripts/test does",
    )
}

fn v4(addr: std::net::SocketAddr) -> SocketAddrV4 {
    match addr {
        std::net::SocketAddr::V4(a) => a,
        std::net::SocketAddr::V6(_) => panic!("an IPv4 address"),
    }
}

/// Issue 44, finding 2: a joiner holds its own connection's credentials,
/// so its binding requests pass every check, from whatever source it
/// forges. Each used to make the host answer that source, learn it as a
/// candidate and check it: a spray from thousands of sources stalled
/// every connection on the socket and reflected traffic at the addresses
/// it named. Now only a handful of sources per connection are answered,
/// each a few times until proven; another guest on the same socket keeps
/// talking meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joiner_spraying_from_many_sources_gets_a_handful_answered() {
    const SOURCES: usize = 300;
    let _serial = SERIAL.lock().await;
    let opts = loopback();
    let host = Endpoint::bind(&opts).await.expect("host endpoint");
    let to = host.local_addr();
    // A guest that plays on meanwhile.
    let other = Endpoint::bind(&opts).await.expect("other guest endpoint");
    let (mut h, mut g) = connect_on(&host, &other).await;

    // The sprayer answers a round like any joiner (a real answer, so the
    // host applies it), then forges its checks from many sources.
    let sprayer = Endpoint::bind(&opts).await.expect("sprayer endpoint");
    let offer = OpenOffer::new(&host).await.expect("offer");
    let (host_ufrag, host_password) = ice_credentials(offer.offer_sdp());
    let answer = GuestAnswer::new(&sprayer, offer.offer_sdp())
        .await
        .expect("answer");
    let (sprayer_ufrag, _) = ice_credentials(answer.answer_sdp());
    // Applied: the host now knows the sprayer's credentials.
    let _answered = offer
        .apply_answer(answer.answer_sdp())
        .await
        .expect("the answer applies");
    let username = format!("{host_ufrag}:{sprayer_ufrag}");

    let mut sources = Vec::new();
    for _ in 0..SOURCES {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("spray socket");
        s.set_nonblocking(true).expect("non-blocking");
        s.send_to(&binding_request(&username, Some(&host_password)), to)
            .expect("sent");
        sources.push(s);
    }
    say(&h.sender, &mut g.receiver, "still here").await;
    say(&g.sender, &mut h.receiver, "and here").await;
    // Whatever the host was going to send them (replies, then its own
    // checks and their retransmissions) has gone out by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut answered = 0;
    let mut datagrams = 0;
    let mut buf = [0u8; 1500];
    for s in &sources {
        let mut got = 0;
        while s.recv(&mut buf).is_ok() {
            got += 1;
        }
        answered += usize::from(got > 0);
        datagrams += got;
    }
    eprintln!("{answered} of {SOURCES} forged sources heard {datagrams} datagrams");
    // A connection hands on the requests of 8 sources at most (the
    // daemon's `MAX_SOURCES`), each until proven, 10 times at most.
    assert!(
        answered <= 8,
        "{answered} of {SOURCES} forged sources were answered"
    );
    assert!(
        datagrams <= 8 * 20,
        "{datagrams} datagrams sent to forged sources"
    );
    timeout(STEP, h.sender.close_and_wait())
        .await
        .expect("bounded");
}

/// Issue 44, finding 3: binding requests signed with a stranger's own
/// credentials but forged from a guest's address used to move that
/// address's route to the stranger's connection, so the guest's datagrams
/// went nowhere until its next check took the route back. An address now
/// moves only once it answered a check of the connection's own: the guest
/// keeps talking, every message on time, all through the forgery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_source_cannot_take_a_guests_route() {
    let _serial = SERIAL.lock().await;
    let opts = loopback();
    let host = Endpoint::bind(&opts).await.expect("host endpoint");
    let to = v4(host.local_addr());
    let victim = Endpoint::bind(&opts).await.expect("victim endpoint");
    let victim_addr = v4(victim.local_addr());
    let (mut h, mut g) = connect_on(&host, &victim).await;

    let stranger = Endpoint::bind(&opts).await.expect("stranger endpoint");
    let offer = OpenOffer::new(&host).await.expect("offer");
    let (host_ufrag, host_password) = ice_credentials(offer.offer_sdp());
    let answer = GuestAnswer::new(&stranger, offer.offer_sdp())
        .await
        .expect("answer");
    let (stranger_ufrag, _) = ice_credentials(answer.answer_sdp());
    let _answered = offer
        .apply_answer(answer.answer_sdp())
        .await
        .expect("the answer applies");

    let raw = raw_sender();
    let username = format!("{host_ufrag}:{stranger_ufrag}");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let forger = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let target = socket2::SockAddr::from(to);
            let mut sent = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && sent < 2_000 {
                let request = binding_request(&username, Some(&host_password));
                raw.send_to(&forged_packet(victim_addr, to, &request), &target)
                    .expect("a forged packet sent");
                sent += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            sent
        })
    };
    // Every message of the guest arrives promptly while the forgery runs
    // (a datagram routed elsewhere waits for SCTP's retransmission, a
    // second or more).
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let began = std::time::Instant::now();
        say(&g.sender, &mut h.receiver, &format!("guest {i}")).await;
        say(&h.sender, &mut g.receiver, &format!("host {i}")).await;
        slowest = slowest.max(began.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let sent = forger.join().expect("the forger");
    eprintln!("{sent} forged requests; the slowest message round took {slowest:?}");
    assert!(sent > 50, "the forgery ran ({sent} requests)");
    assert!(
        slowest < Duration::from_millis(500),
        "a message round took {slowest:?} during the forgery"
    );
    timeout(STEP, h.sender.close_and_wait())
        .await
        .expect("bounded");
}
