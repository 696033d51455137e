//! The round loop: one offer round open whenever a seat is free, each
//! answer connected in the background and its link handed to the session.

use std::time::Duration;

use protocol::api::PutSessionRequest;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use netcode::host::join_slots::JoinPolicy;
use netcode::host::rounds::{self, RoundPolicy, Seats};

use super::joins::{Joined, Joins};
use super::{RETRY_PAUSE, ServingConfig};
use crate::driver::ServedProgress;
use crate::lobby_client::{LobbyClient, PublishedSession, SignalingError};
use crate::transport::webrtc::{Endpoint, OpenOffer, WebRtcLink};

/// How long one answer long-poll waits (the server caps it).
const ANSWER_POLL: Duration = Duration::from_millis(rounds::ANSWER_POLL_MS);

/// Publishes `players` in the lobby unless `published` says it already
/// shows that count; a failure is logged and tried again at the next call.
async fn publish_players(
    client: &LobbyClient,
    session: &PublishedSession,
    players: u32,
    published: &mut Option<u32>,
) {
    if *published == Some(players) {
        return;
    }
    let update = PutSessionRequest {
        players: Some(players),
        ..Default::default()
    };
    match client.update(session, &update).await {
        Ok(_) => *published = Some(players),
        Err(e) => tracing::debug!(error = %e, "publishing players failed"),
    }
}

/// Serves offer rounds while the session waits in its lobby (and, with
/// late join, while it runs): keeps one round open whenever a seat is
/// free, connects each answer and hands the link to the session. Returns
/// once the session is gone, or has started with late join off.
///
/// An answer is connected in the background and the next round opens at
/// once, so a stranger who grabs a round with an answer that never
/// connects costs the real joiner one round, not the connect timeout (see
/// docs/decisions.md, "Round grabbing"). Answers being connected follow
/// `netcode`'s join policy ([`Joins`]): one that shows no ICE progress
/// within seconds is dropped, and joins in flight delay a round by at
/// most a second, never stop it. Joins in flight do not hold seats: the
/// session refuses a joiner beyond its seats at its hello.
pub(super) async fn round_loop(
    config: &ServingConfig,
    endpoint: &Endpoint,
    client: &LobbyClient,
    session: &PublishedSession,
    links: mpsc::Sender<WebRtcLink>,
    mut progress: watch::Receiver<ServedProgress>,
) {
    let mut open: Option<(OpenOffer, u32)> = None;
    let mut joins = Joins::new(JoinPolicy {
        connect_deadline: endpoint.options().connect_timeout,
        ..JoinPolicy::default()
    });
    let mut handed = 0usize;
    let mut published_players = None;
    let policy = RoundPolicy {
        guest_seats: config.guest_seats(),
        start_when: config.start_when,
        late_join: config.host.late_join,
        max_spectators: config.host.max_spectators,
    };
    loop {
        let p = *progress.borrow_and_update();
        if !policy.takes_joiners(p.started) {
            break;
        }
        let players = config.local_players() + u32::try_from(p.seats_taken).unwrap_or(u32::MAX);
        // The lobby follows admissions (and leaves) at once, with the round
        // left open; without a round the next one carries the count.
        if open.is_some() {
            publish_players(client, session, players, &mut published_players).await;
        }
        let Some((offer, round)) = open.take() else {
            let seat_free = policy.wants_round(Seats {
                started: p.started,
                taken: p.seats_taken,
                spectators: p.spectators,
            });
            let opens_at = joins.round_opens_at();
            if seat_free && opens_at <= Instant::now() {
                // A seat is free: open a round.
                let offer = match OpenOffer::new(endpoint).await {
                    Ok(o) => o,
                    Err(e) => {
                        tracing::warn!(error = %e, "gathering an offer failed; retrying");
                        tokio::time::sleep(RETRY_PAUSE).await;
                        continue;
                    }
                };
                let update = PutSessionRequest {
                    offer: Some(offer.offer_sdp().to_owned()),
                    players: Some(players),
                    ..Default::default()
                };
                match client.update(session, &update).await {
                    Ok(resp) => match resp.round {
                        Some(r) => {
                            published_players = Some(players);
                            open = Some((offer, r));
                        }
                        None => {
                            tracing::warn!("the lobby opened no round for the offer");
                            offer.close().await;
                            tokio::time::sleep(RETRY_PAUSE).await;
                        }
                    },
                    Err(e) if session_gone(&e) => {
                        offer.close().await;
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "publishing a round failed; retrying");
                        offer.close().await;
                        tokio::time::sleep(RETRY_PAUSE).await;
                    }
                }
                continue;
            }
            // Full, or every join slot taken for a moment: keep `players`
            // current, wait for a seat to free up, a join to end, a slot
            // to come free, or the start.
            publish_players(client, session, players, &mut published_players).await;
            tokio::select! {
                changed = seats_changed(&mut progress, &p) => if changed.is_err() {
                    return;
                },
                Some(joined) = joins.next(), if !joins.is_empty() => {
                    if !hand_over(joined, &links, &mut progress, &mut handed).await {
                        return;
                    }
                }
                () = tokio::time::sleep_until(opens_at), if seat_free => {}
            }
            continue;
        };
        let answer = tokio::select! {
            a = client.wait_answer(session, round, ANSWER_POLL) => a,
            changed = seats_changed(&mut progress, &p) => {
                // Seat or start change: re-check with the round still open.
                if changed.is_err() {
                    offer.close().await;
                    return;
                }
                open = Some((offer, round));
                continue;
            }
            Some(joined) = joins.next(), if !joins.is_empty() => {
                open = Some((offer, round));
                if !hand_over(joined, &links, &mut progress, &mut handed).await {
                    return;
                }
                continue;
            }
        };
        let answer = match answer {
            Ok(Some(a)) => a,
            Ok(None) => {
                open = Some((offer, round));
                continue;
            }
            Err(e) if session_gone(&e) => {
                offer.close().await;
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "answer poll failed; retrying");
                open = Some((offer, round));
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        joins.start(offer, answer.answer, answer.name);
    }
    // Started: joins still in flight are handed over all the same, so their
    // joiners hear `session-started` from the session instead of silence.
    while let Some(joined) = joins.next().await {
        if !hand_over(joined, &links, &mut progress, &mut handed).await {
            return;
        }
    }
}

/// What of a session's progress the round loop acts on: the start and the
/// seats, never the tick count (which changes 60 times a second).
fn seats_view(p: &ServedProgress) -> (bool, usize, usize) {
    (p.started, p.seats_taken, p.spectators)
}

/// Waits until the start or the seats differ from `seen`'s (at once if they
/// already do); an error once the session is gone. A wait for this beside
/// an answer's long-poll ends the poll, so ticks must not end it: they
/// made every session drop and reopen its poll (and its connection to the
/// lobby) on every tick.
async fn seats_changed(
    progress: &mut watch::Receiver<ServedProgress>,
    seen: &ServedProgress,
) -> Result<(), watch::error::RecvError> {
    let seen = seats_view(seen);
    progress
        .wait_for(|p| seats_view(p) != seen)
        .await
        .map(|_| ())
}

/// Hands a connected joiner's link to the session and waits until the
/// session holds it (so the next seat count includes it); logs a failed
/// join. `false` when the session is gone.
async fn hand_over(
    joined: Joined,
    links: &mpsc::Sender<WebRtcLink>,
    progress: &mut watch::Receiver<ServedProgress>,
    handed: &mut usize,
) -> bool {
    let Joined { name, link } = joined;
    let link = match link {
        Ok(link) => link,
        Err(e) => {
            tracing::warn!(error = %e, name = %name, "a joiner's connection failed");
            return true;
        }
    };
    if links.send(link).await.is_err() {
        return false;
    }
    *handed += 1;
    tracing::info!(name = %name, guests = *handed, "guest connected");
    // Bounded: the session may be gone.
    let want = *handed;
    let seen = tokio::time::timeout(
        Duration::from_secs(5),
        progress.wait_for(|p| p.connections >= want || p.started),
    )
    .await;
    matches!(seen, Ok(Ok(_)))
}

/// Whether `e` says the lobby entry is gone for good, so no more rounds
/// are published: unknown or expired, the token refused, or ended by a
/// moderator (logged: the operator should know the lobby refused it).
fn session_gone(e: &SignalingError) -> bool {
    match e {
        SignalingError::EndedByModerator(code) => {
            tracing::warn!(%code, "a moderator of the lobby ended this session; not publishing it again");
            true
        }
        SignalingError::NoSuchSession(_) | SignalingError::Rejected(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        std::pin::Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn ticks_do_not_end_a_wait_for_the_seats_and_a_seat_change_does() {
        let (tx, mut rx) = watch::channel(ServedProgress::default());
        let seen = *rx.borrow_and_update();
        let mut wait = Box::pin(seats_changed(&mut rx, &seen));
        for tick in 1..=120 {
            tx.send_modify(|p| {
                p.ticks = tick;
                p.connections = 1;
            });
            assert!(poll_once(&mut wait).is_pending(), "tick {tick} ended it");
        }
        tx.send_modify(|p| p.seats_taken = 1);
        assert!(matches!(poll_once(&mut wait), Poll::Ready(Ok(()))));
    }

    #[test]
    fn a_change_made_before_the_wait_ends_it_at_once() {
        let (tx, mut rx) = watch::channel(ServedProgress::default());
        let seen = *rx.borrow_and_update();
        tx.send_modify(|p| p.started = true);
        let mut wait = Box::pin(seats_changed(&mut rx, &seen));
        assert!(matches!(poll_once(&mut wait), Poll::Ready(Ok(()))));
        drop(wait);
        drop(tx);
        let seen = *rx.borrow();
        let mut gone = Box::pin(seats_changed(&mut rx, &seen));
        assert!(matches!(poll_once(&mut gone), Poll::Ready(Err(_))));
    }
}
