//! The process's file-descriptor limit against the connection cap.
//!
//! Every connection is a descriptor, and at the limit the server can no
//! longer accept anyone. The usual soft limit (1,024) is below the default
//! `--max-connections` (4,096), so at start the soft limit is raised toward
//! the hard limit, as far as the connections and [`reserved_for`] the rest
//! need; if even that is too low, the connection cap is lowered to what
//! fits, with a warning, so the cap (answered `503`) is reached before the
//! limit. The decisions are pure functions; [`fit_connections`] applies them.

/// Descriptors kept for everything but client connections and the database
/// pool: the listener, standard streams, the runtime, the PostgreSQL
/// listener, a margin.
pub const RESERVED_BASE: u64 = 64;

/// Descriptors one database pool connection may hold (SQLite: the database,
/// its write-ahead log and its shared memory; PostgreSQL: one socket).
pub const PER_DB_CONNECTION: u64 = 3;

/// A resource limit pair; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorLimit {
    /// The limit in force.
    pub soft: Option<u64>,
    /// How far the process may raise `soft` itself.
    pub hard: Option<u64>,
}

/// Descriptors to keep aside from client connections with a pool of
/// `db_max_connections`.
pub fn reserved_for(db_max_connections: u32) -> u64 {
    RESERVED_BASE + PER_DB_CONNECTION * u64::from(db_max_connections)
}

/// The soft limit to ask for so that `needed` descriptors fit (at most the
/// hard limit); `None` when the current one is enough or cannot be raised.
pub fn soft_limit_to_ask(limit: DescriptorLimit, needed: u64) -> Option<u64> {
    let soft = limit.soft?;
    if soft >= needed {
        return None;
    }
    let target = limit.hard.map_or(needed, |hard| hard.min(needed));
    (target > soft).then_some(target)
}

/// How many connections fit under the soft limit `soft` with `reserved`
/// descriptors kept aside: `wanted`, or fewer (at least one).
pub fn connections_that_fit(soft: Option<u64>, wanted: usize, reserved: u64) -> usize {
    let Some(soft) = soft else {
        return wanted;
    };
    let room = usize::try_from(soft.saturating_sub(reserved)).unwrap_or(usize::MAX);
    wanted.min(room).max(1)
}

/// Raises the soft descriptor limit as far as `max_connections` and
/// `reserved` need (up to the hard limit), and returns how many connections
/// fit under the limit then in force (logging a warning when fewer than
/// `max_connections`). Where limits cannot be read, returns `max_connections`.
pub fn fit_connections(max_connections: usize, reserved: u64) -> usize {
    let Some(before) = read_limit() else {
        return max_connections;
    };
    let needed = (max_connections as u64).saturating_add(reserved);
    let mut soft = before.soft;
    if let Some(ask) = soft_limit_to_ask(before, needed) {
        match raise_soft_limit(before, ask) {
            Ok(()) => {
                tracing::info!(from = ?before.soft, to = ask, "raised the open-file limit");
                soft = Some(ask);
            }
            Err(err) => {
                tracing::warn!(error = %err, wanted = ask, "cannot raise the open-file limit")
            }
        }
    }
    let fit = connections_that_fit(soft, max_connections, reserved);
    if fit < max_connections {
        tracing::warn!(
            open_file_limit = ?soft,
            hard_limit = ?before.hard,
            max_connections = fit,
            configured = max_connections,
            "the open-file limit leaves room for fewer connections than --max-connections: \
             the cap is lowered to max_connections (raise the hard limit, e.g. systemd's \
             LimitNOFILE= or `ulimit -Hn`, to serve more)"
        );
    }
    fit
}

#[cfg(unix)]
fn read_limit() -> Option<DescriptorLimit> {
    use rustix::process::{Resource, getrlimit};
    let limit = getrlimit(Resource::Nofile);
    Some(DescriptorLimit {
        soft: limit.current,
        hard: limit.maximum,
    })
}

#[cfg(unix)]
fn raise_soft_limit(limit: DescriptorLimit, soft: u64) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(soft),
            maximum: limit.hard,
        },
    )
    .map_err(std::io::Error::from)
}

#[cfg(not(unix))]
fn read_limit() -> Option<DescriptorLimit> {
    None
}

#[cfg(not(unix))]
fn raise_soft_limit(_: DescriptorLimit, _: u64) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(soft: Option<u64>, hard: Option<u64>) -> DescriptorLimit {
        DescriptorLimit { soft, hard }
    }

    #[test]
    fn the_soft_limit_is_raised_as_far_as_needed_and_no_further_than_the_hard_one() {
        // The usual Linux defaults against the default cap plus the reserve.
        let needed = 4096 + reserved_for(16);
        assert_eq!(
            soft_limit_to_ask(limit(Some(1024), Some(524_288)), needed),
            Some(needed)
        );
        assert_eq!(
            soft_limit_to_ask(limit(Some(1024), None), needed),
            Some(needed)
        );
        assert_eq!(
            soft_limit_to_ask(limit(Some(1024), Some(4096)), needed),
            Some(4096)
        );
        assert_eq!(
            soft_limit_to_ask(limit(Some(65_536), Some(65_536)), needed),
            None
        );
        assert_eq!(soft_limit_to_ask(limit(None, None), needed), None);
        assert_eq!(
            soft_limit_to_ask(limit(Some(1024), Some(1024)), needed),
            None
        );
    }

    #[test]
    fn connections_are_clamped_below_the_limit_with_room_for_the_rest() {
        let reserved = reserved_for(16);
        assert_eq!(reserved, 112);
        assert_eq!(connections_that_fit(Some(1024), 4096, reserved), 912);
        assert_eq!(connections_that_fit(Some(4096), 4096, reserved), 3984);
        assert_eq!(connections_that_fit(Some(4208), 4096, reserved), 4096);
        assert_eq!(connections_that_fit(Some(1_048_576), 4096, reserved), 4096);
        assert_eq!(connections_that_fit(None, 4096, reserved), 4096);
        assert_eq!(
            connections_that_fit(Some(50), 4096, reserved),
            1,
            "never below one"
        );
    }
}
