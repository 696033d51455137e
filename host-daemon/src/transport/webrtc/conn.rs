//! A connection's place in its endpoint: what every handle of one
//! connection (offer, answer, link) holds in turn, and closes on drop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::timeout;

use super::endpoint::Endpoint;
use super::shared::{Command, Shared};
use super::{CLOSE_FLUSH_TIMEOUT, WebRtcError};

/// A connection's place in its endpoint, held by whichever handle owns it
/// now. Dropped without a close, it closes the connection.
pub(super) struct Conn {
    pub(super) endpoint: Endpoint,
    pub(super) shared: Arc<Shared>,
    close_sent: AtomicBool,
}

impl Conn {
    pub(super) fn new(endpoint: &Endpoint, shared: Arc<Shared>) -> Self {
        Conn {
            endpoint: endpoint.clone(),
            shared,
            close_sent: AtomicBool::new(false),
        }
    }

    /// Asks the run loop to close it; returns at once.
    pub(super) fn start_close(&self) {
        if !self.close_sent.swap(true, Ordering::SeqCst) {
            let _ = self
                .endpoint
                .commands
                .send(Command::Close(self.shared.id, None));
        }
    }

    /// Closes it and waits (bounded) until it is.
    pub(super) async fn close_and_wait(&self) {
        self.close_sent.store(true, Ordering::SeqCst);
        let id = self.shared.id;
        let done = self.endpoint.ask(|r| Command::Close(id, Some(r)));
        let _ = timeout(CLOSE_FLUSH_TIMEOUT + Duration::from_secs(5), done).await;
    }

    /// Resolves once every channel is open, or with the error once the
    /// connection failed or `within` passed.
    pub(super) async fn opened(&self, within: Duration) -> Result<(), WebRtcError> {
        let mut progress = self.shared.progress.subscribe();
        let waited = timeout(
            within,
            progress.wait_for(|p| p.failed || p.open.iter().all(|o| *o)),
        )
        .await
        .map(|r| r.is_ok_and(|p| !p.failed));
        match waited {
            Ok(true) => Ok(()),
            Ok(false) => Err(WebRtcError::ConnectFailed),
            Err(_) => Err(WebRtcError::ConnectTimeout(within)),
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.start_close();
    }
}
