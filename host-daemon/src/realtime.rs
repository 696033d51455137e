//! `netcode::sim`'s scenarios played in real time: the same host and
//! guests, but through the daemon's drivers over the tokio-clocked
//! simulated transport ([`crate::transport::simnet`]). Behind
//! `host-daemon simulate --realtime` and the capacity benchmark, where tick
//! lateness on a busy machine is the point; the netcode's own tests use the
//! virtual clock instead.

use netcode::sim::{NetAction, Outcome, Scenario};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::driver::{Guest, Host, Observers, ServedProgress, run_guest, run_served};
use crate::metrics::SessionMetrics;
use crate::transport::PeerLink;
use crate::transport::simnet::{LinkControl, SimReceiver, SimSender, link};

type SimLink = PeerLink<SimSender, SimReceiver>;

/// Plays a scenario on the current runtime (paused time works);
/// `metrics`, if given, counts the host's events.
pub async fn run(
    scenario: Scenario<engine::RaycasterEngine>,
    metrics: Option<SessionMetrics>,
) -> Outcome<engine::RaycasterEngine> {
    let started = Instant::now();
    let (link_tx, link_rx) = mpsc::channel::<SimLink>(64);
    let (progress_tx, mut progress_rx) = watch::channel(ServedProgress::default());
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let mut controls: Vec<LinkControl> = Vec::new();
    let mut guest_tasks = Vec::new();
    for (config, link_config) in scenario.guests {
        let (host_end, guest_end, control) = link(link_config);
        controls.push(control);
        let _ = link_tx.send(host_end).await;
        guest_tasks.push(tokio::spawn(run_guest(Guest::new(config), guest_end)));
    }
    let shutdown = async move {
        if stop_rx.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let host_task = tokio::spawn(run_served(
        Host::new(scenario.host),
        link_rx,
        shutdown,
        Observers {
            progress: Some(progress_tx),
            metrics,
            ..Observers::default()
        },
    ));
    let mut events = scenario.events;
    events.sort_by_key(|e| e.at_tick);
    let mut late_tasks = Vec::new();
    let mut stop_tx = Some(stop_tx);
    for ev in events {
        if progress_rx
            .wait_for(|p| p.ticks >= ev.at_tick)
            .await
            .is_err()
        {
            break;
        }
        match ev.action {
            NetAction::Stall(n, d) => {
                if let Some(c) = controls.get(n) {
                    c.stall(d);
                }
            }
            NetAction::Disconnect(n) => {
                if let Some(c) = controls.get(n) {
                    c.disconnect();
                }
            }
            NetAction::HostLoss => {
                controls.iter().for_each(LinkControl::disconnect);
                if let Some(tx) = stop_tx.take() {
                    let _ = tx.send(());
                }
            }
            // The guests run in their own tasks here, out of reach: a
            // rejoin connects with whatever token its config carries (none:
            // it is a late join).
            NetAction::LateJoin(config, link_config)
            | NetAction::Rejoin(_, config, link_config) => {
                let (host_end, guest_end, control) = link(link_config);
                controls.push(control);
                let _ = link_tx.send(host_end).await;
                late_tasks.push(tokio::spawn(run_guest(Guest::new(config), guest_end)));
            }
        }
    }
    drop(link_tx);
    let host = match host_task.await {
        Ok(h) => h,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    let mut guests = Vec::new();
    for t in guest_tasks {
        match t.await {
            Ok(g) => guests.push(g),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    let mut late = Vec::new();
    for t in late_tasks {
        match t.await {
            Ok(g) => late.push(g),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    drop(stop_tx);
    let bytes_to_guests = controls
        .iter()
        .take(guests.len())
        .map(LinkControl::host_bytes_sent)
        .collect();
    Outcome {
        host,
        guests,
        late,
        elapsed: started.elapsed(),
        bytes_to_guests,
        // Real-time runs do not record replays.
        replay: Vec::new(),
    }
}
