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
//! flight otherwise. A client with one connection loses it only when
//! nobody holds more; browsers and proxies reconnect idle keep-alive
//! connections without a word.

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

#[derive(Debug, Default)]
struct Inner {
    by_client: HashMap<IpAddr, VecDeque<(u64, Arc<Notify>)>>,
    next_id: u64,
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
        inner
            .by_client
            .entry(client)
            .or_default()
            .push_back((id, asked.clone()));
        Registered {
            connections: self.clone(),
            client,
            id,
            asked,
        }
    }

    /// Asks the oldest connection of the client holding the most to close
    /// (it leaves the list at once, so it is asked once); that client.
    pub fn shed_one(&self) -> Option<IpAddr> {
        let mut inner = self.lock();
        let client = inner
            .by_client
            .iter()
            .max_by_key(|(_, conns)| conns.len())
            .map(|(client, _)| *client)?;
        let conns = inner.by_client.get_mut(&client)?;
        let (_, asked) = conns.pop_front()?;
        if conns.is_empty() {
            inner.by_client.remove(&client);
        }
        drop(inner);
        asked.notify_one();
        Some(client)
    }

    /// Connections `client` holds that were not asked to close.
    pub fn held_by(&self, client: IpAddr) -> usize {
        self.lock().by_client.get(&client).map_or(0, VecDeque::len)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut inner = self.connections.lock();
        if let Some(conns) = inner.by_client.get_mut(&self.client) {
            conns.retain(|(id, _)| *id != self.id);
            if conns.is_empty() {
                inner.by_client.remove(&self.client);
            }
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
        assert_eq!(open.shed_one(), Some(ip("192.0.2.66")));
        // The oldest was asked (the permit waits for it), the others not.
        tokio::time::timeout(std::time::Duration::from_secs(1), heavy[0].asked_to_close())
            .await
            .expect("the oldest was asked");
        assert_eq!(open.held_by(ip("192.0.2.66")), 2);
        assert_eq!(open.shed_one(), Some(ip("192.0.2.66")));
        // Two each now: either may go; then the victim holds one like the
        // heavy client, and each is asked in turn.
        assert!(open.shed_one().is_some());
        assert!(open.shed_one().is_some());
        assert_eq!(open.shed_one(), None, "every connection was asked once");
        drop(victim);
        drop(heavy);
        assert!(open.lock().by_client.is_empty(), "dropped entries leave");
    }

    #[test]
    fn a_connection_that_ends_leaves_the_list() {
        let open = Arc::new(OpenConnections::default());
        let a = open.register(ip("192.0.2.9"));
        let b = open.register(ip("192.0.2.9"));
        drop(a);
        assert_eq!(open.held_by(ip("192.0.2.9")), 1);
        drop(b);
        assert_eq!(open.held_by(ip("192.0.2.9")), 0);
        assert_eq!(open.shed_one(), None);
    }
}
