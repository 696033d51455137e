//! Which connection goes first when the front door is nearly full: the
//! oldest of the client that holds the most.
//!
//! Per-client caps alone let a few dozen clients (65 at the default caps,
//! or as many IPv6 networks) fill `--max-connections` between them, and
//! then every newcomer is turned away. So once fewer than a sixteenth of
//! the places are free, each connection the front door takes, and each it
//! turns away, asks one open connection to close: the oldest of the client
//! holding the most. The connection closes at once when it is idle
//! (waiting for a request, or for its first one), after the response in
//! flight otherwise, and counts until it has; no more are asked while a
//! sixteenth of the places are asked and still open, and a client holding
//! one connection is never asked. Browsers and proxies reconnect idle
//! keep-alive connections without a word.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// The open connections of each client, oldest first, and how to ask one
/// to close.
#[derive(Debug, Default)]
pub struct OpenConnections {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Open {
    id: u64,
    asked: Arc<Notify>,
    /// Asked to close (it still counts until it has).
    was_asked: bool,
}

#[derive(Debug, Default)]
struct Inner {
    by_client: HashMap<IpAddr, VecDeque<Open>>,
    next_id: u64,
    /// Connections asked to close that have not yet.
    asked_open: usize,
}

/// One connection's entry, removed when dropped (with its connection).
#[derive(Debug)]
pub struct Registered {
    connections: Arc<OpenConnections>,
    client: IpAddr,
    id: u64,
    asked: Arc<Notify>,
}

impl Registered {
    /// Completes once the connection is asked to close.
    pub async fn asked_to_close(&self) {
        self.asked.notified().await;
    }
}

impl OpenConnections {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing here can leave the map half-changed: recover a lock a
        // panicking holder poisoned.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Enters a new connection of `client` (a client key), newest last.
    pub fn register(self: &Arc<Self>, client: IpAddr) -> Registered {
        let asked = Arc::new(Notify::new());
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.by_client.entry(client).or_default().push_back(Open {
            id,
            asked: asked.clone(),
            was_asked: false,
        });
        Registered {
            connections: self.clone(),
            client,
            id,
            asked,
        }
    }

    /// Asks the oldest connection not yet asked of the client holding the
    /// most to close, unless `outstanding` connections asked are still open
    /// (a busy one finishes its response first: asking more would reach
    /// past the heaviest clients) or nobody holds more than one; that
    /// client.
    pub fn shed_one(&self, outstanding: usize) -> Option<IpAddr> {
        let mut inner = self.lock();
        if inner.asked_open >= outstanding {
            return None;
        }
        let client = inner
            .by_client
            .iter()
            .filter(|(_, conns)| conns.len() >= 2 && conns.iter().any(|c| !c.was_asked))
            .max_by_key(|(_, conns)| conns.len())
            .map(|(client, _)| *client)?;
        let open = inner
            .by_client
            .get_mut(&client)?
            .iter_mut()
            .find(|c| !c.was_asked)?;
        open.was_asked = true;
        let asked = open.asked.clone();
        inner.asked_open += 1;
        drop(inner);
        asked.notify_one();
        Some(client)
    }

    /// Connections `client` holds (asked to close or not).
    pub fn held_by(&self, client: IpAddr) -> usize {
        self.lock().by_client.get(&client).map_or(0, VecDeque::len)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut inner = self.connections.lock();
        let mut was_asked = false;
        if let Some(conns) = inner.by_client.get_mut(&self.client) {
            conns.retain(|c| {
                let this = c.id == self.id;
                was_asked |= this && c.was_asked;
                !this
            });
            if conns.is_empty() {
                inner.by_client.remove(&self.client);
            }
        }
        if was_asked {
            inner.asked_open = inner.asked_open.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    #[tokio::test]
    async fn the_heaviest_clients_oldest_connection_is_asked_first() {
        let open = Arc::new(OpenConnections::default());
        let victim = open.register(ip("192.0.2.1"));
        let heavy: Vec<Registered> = (0..3).map(|_| open.register(ip("192.0.2.66"))).collect();
        assert_eq!(open.shed_one(8), Some(ip("192.0.2.66")));
        tokio::time::timeout(std::time::Duration::from_secs(1), heavy[0].asked_to_close())
            .await
            .expect("the oldest was asked");
        assert_eq!(open.held_by(ip("192.0.2.66")), 3, "asked, it still counts");
        assert_eq!(open.shed_one(8), Some(ip("192.0.2.66")));
        assert_eq!(open.shed_one(8), Some(ip("192.0.2.66")));
        assert_eq!(
            open.shed_one(8),
            None,
            "every connection of a client with several was asked; one alone is never"
        );
        drop(heavy);
        assert_eq!(open.shed_one(8), None, "a client holding one is left alone");
        drop(victim);
        assert!(open.lock().by_client.is_empty(), "dropped entries leave");
        assert_eq!(open.lock().asked_open, 0);
    }

    #[test]
    fn asks_stop_while_as_many_asked_are_still_open() {
        let open = Arc::new(OpenConnections::default());
        let held: Vec<Registered> = (0..6).map(|_| open.register(ip("192.0.2.66"))).collect();
        assert!(open.shed_one(2).is_some());
        assert!(open.shed_one(2).is_some());
        assert_eq!(open.shed_one(2), None, "two asked and still open");
        drop(held);
        assert_eq!(open.lock().asked_open, 0);
    }
}
