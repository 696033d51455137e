//! The round loop: `netcode`'s hosting machine
//! ([`netcode::host::hosting`], which the browser host drives too) on
//! tokio. The machine says when to make and publish an offer, poll its
//! answer, connect an answer, give a join up and update the lobby's
//! `players`; this loop does it and reports back. Connected joiners' links
//! are handed to the session.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use protocol::api::{AnswerView, PutSessionRequest};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use netcode::host::hosting::{Hosting, HostingCommand, HostingEvent, LobbyCall, StopReason};
use netcode::host::join_slots::{JoinId, JoinPolicy};
use netcode::host::rounds::{self, RoundPolicy};

use super::ServingConfig;
use super::joins::{JoinNews, Joined, Joins};
use crate::driver::ServedProgress;
use crate::lobby_client::{LobbyClient, PublishedSession, SignalingError};
use crate::transport::webrtc::{Endpoint, OpenOffer, WebRtcLink};

/// How long one answer long-poll waits (the server caps it).
const ANSWER_POLL: Duration = Duration::from_millis(rounds::ANSWER_POLL_MS);

/// A lobby call under way beside the loop's other waits.
type Call<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A round's answer poll: the round, and what the lobby said.
type Poll<'a> = Call<'a, (u32, Result<Option<AnswerView>, SignalingError>)>;

/// Serves offer rounds while the session takes joiners (in its lobby, and,
/// with late join or spectator places, while it runs), as the hosting
/// machine says. Returns once the machine stops (the lobby entry is gone,
/// or the session takes no more joiners and none is in flight) or the
/// session is gone.
///
/// An answer is connected in the background and the next round opens at
/// once, so a stranger who grabs a round with an answer that never
/// connects costs the real joiner one round, not the connect timeout (see
/// docs/decisions.md, "Round grabbing"); the join policy drops such joins
/// within seconds.
pub(super) async fn round_loop(
    config: &ServingConfig,
    endpoint: &Endpoint,
    client: &LobbyClient,
    session: &PublishedSession,
    links: mpsc::Sender<WebRtcLink>,
    mut progress: watch::Receiver<ServedProgress>,
) {
    let policy = RoundPolicy {
        guest_seats: config.guest_seats(),
        start_when: config.start_when,
        late_join: config.host.late_join,
        max_spectators: config.host.max_spectators,
    };
    let joins_policy = JoinPolicy {
        connect_deadline: endpoint.options().connect_timeout,
        ..JoinPolicy::default()
    };
    let mut hosting = Hosting::new(policy, joins_policy, config.local_players(), None);
    let origin = Instant::now();
    let now = || origin.elapsed();
    let mut joins = Joins::new();
    // The offer in hand, and the answer just polled for it.
    let mut offer: Option<OpenOffer> = None;
    let mut answer: Option<AnswerView> = None;
    let mut poll: Option<Poll<'_>> = None;
    let mut players: Option<Call<'_, (u32, Result<(), SignalingError>)>> = None;
    let mut handed = 0usize;
    let mut seen = *progress.borrow_and_update();
    let mut commands = hosting.start(now());
    commands.extend(feed(&mut hosting, seats_event(&seen), now()));
    loop {
        // Do what the machine says; making and publishing an offer are
        // short and reported at once, the rest is waited for below.
        let mut queue = std::collections::VecDeque::from(commands);
        while let Some(command) = queue.pop_front() {
            let event = match command {
                HostingCommand::MakeOffer => match OpenOffer::new(endpoint).await {
                    Ok(made) => {
                        offer = Some(made);
                        Some(HostingEvent::OfferMade)
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "gathering an offer failed; retrying");
                        Some(HostingEvent::OfferFailed)
                    }
                },
                HostingCommand::PublishRound { players } => {
                    Some(publish_round(client, session, offer.as_ref(), players).await)
                }
                HostingCommand::PollAnswer { round } => {
                    poll = Some(Box::pin(async move {
                        (round, client.wait_answer(session, round, ANSWER_POLL).await)
                    }));
                    None
                }
                HostingCommand::Connect { join } => {
                    match (offer.take(), answer.take()) {
                        (Some(made), Some(a)) => joins.start(JoinId(join), made, a.answer, a.name),
                        _ => tracing::warn!(
                            "the hosting machine connected a join without an offer and answer"
                        ),
                    }
                    None
                }
                HostingCommand::DropJoin { join, why } => {
                    tracing::info!(?why, "dropped a join that did not connect in time");
                    joins.cancel(JoinId(join));
                    None
                }
                HostingCommand::CloseOffer => {
                    if let Some(made) = offer.take() {
                        made.close().await;
                    }
                    None
                }
                HostingCommand::PublishPlayers { players: count } => {
                    players = Some(Box::pin(async move {
                        let update = PutSessionRequest {
                            players: Some(count),
                            ..Default::default()
                        };
                        (count, client.update(session, &update).await.map(|_| ()))
                    }));
                    None
                }
                HostingCommand::Stop { why } => {
                    if why == StopReason::LobbyGone {
                        tracing::info!(code = %session.code, "the lobby entry is gone: no more rounds");
                    }
                    None
                }
            };
            if let Some(event) = event {
                queue.extend(feed(&mut hosting, event, now()));
            }
        }
        if hosting.stopped() {
            if let Some(made) = offer.take() {
                made.close().await;
            }
            return;
        }
        let wake = hosting.next_wake(now()).map(|at| origin + at);
        let event = tokio::select! {
            Some((round, result)) = async { Some(poll.as_mut()?.await) }, if poll.is_some() => {
                poll = None;
                match result {
                    Ok(Some(a)) => {
                        answer = Some(a);
                        HostingEvent::Answered { round }
                    }
                    Ok(None) => HostingEvent::PollEmpty { round },
                    Err(e) => lobby_failed(LobbyCall::PollAnswer, &e),
                }
            }
            Some((count, result)) = async { Some(players.as_mut()?.await) }, if players.is_some() => {
                players = None;
                match result {
                    Ok(()) => HostingEvent::PlayersPublished { players: count },
                    Err(e) => lobby_failed(LobbyCall::PublishPlayers, &e),
                }
            }
            changed = seats_changed(&mut progress, &seen) => {
                if changed.is_err() {
                    return;
                }
                seen = *progress.borrow_and_update();
                seats_event(&seen)
            }
            Some(news) = joins.next(), if !joins.is_empty() => match news {
                JoinNews::IceProgress(id) => HostingEvent::IceProgress { join: id.0 },
                JoinNews::Ended(id, joined) => {
                    if let Some(joined) = joined
                        && !hand_over(joined, &links, &mut progress, &mut handed).await
                    {
                        return;
                    }
                    HostingEvent::JoinEnded { join: id.0 }
                }
            },
            () = sleep_until(wake), if wake.is_some() => HostingEvent::Clock,
        };
        commands = feed(&mut hosting, event, now());
    }
}

/// Reports `event` to the machine; an event it refuses (a bug here) is
/// logged and changes nothing.
fn feed(hosting: &mut Hosting, event: HostingEvent, now: Duration) -> Vec<HostingCommand> {
    hosting.on(event, now).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the hosting machine refused an event");
        Vec::new()
    })
}

fn seats_event(p: &ServedProgress) -> HostingEvent {
    HostingEvent::Seats {
        started: p.started,
        taken: p.seats_taken,
        spectators: p.spectators,
    }
}

fn lobby_failed(call: LobbyCall, e: &SignalingError) -> HostingEvent {
    match e {
        // The operator should know the lobby refused it.
        SignalingError::EndedByModerator(code) => tracing::warn!(
            %code,
            "a moderator of the lobby ended this session; not publishing it again"
        ),
        _ => tracing::warn!(error = %e, ?call, "a lobby call for the rounds failed"),
    }
    HostingEvent::LobbyFailed {
        call,
        code: e.api_code(),
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Publishes the offer in hand as the next round with `players`.
async fn publish_round(
    client: &LobbyClient,
    session: &PublishedSession,
    offer: Option<&OpenOffer>,
    players: u32,
) -> HostingEvent {
    let Some(offer) = offer else {
        return HostingEvent::NoRound;
    };
    let update = PutSessionRequest {
        offer: Some(offer.offer_sdp().to_owned()),
        players: Some(players),
        ..Default::default()
    };
    match client.update(session, &update).await {
        Ok(resp) => match resp.round {
            Some(round) => HostingEvent::RoundPublished { round },
            None => {
                tracing::warn!("the lobby opened no round for the offer");
                HostingEvent::NoRound
            }
        },
        Err(e) => lobby_failed(LobbyCall::PublishRound, &e),
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
