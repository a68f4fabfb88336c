//! Read connections for the API and retention: a bounded set of blocking
//! clients (the writer and the listener have their own).

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use postgres::Client;

use super::Connector;
use crate::store::db::DbError;
use crate::store::lock;

/// Read connections: at most `max` open, idle ones reused; a caller waits
/// up to the connect timeout for one when all are busy.
pub(super) struct Pool {
    config: Connector,
    max: usize,
    wait: Duration,
    pub(super) state: Mutex<PoolState>,
    freed: Condvar,
}

pub(super) struct PoolState {
    pub(super) idle: Vec<Client>,
    open: usize,
}

impl Pool {
    pub(super) fn new(config: Connector, max: usize, wait: Duration) -> Pool {
        Pool {
            config,
            max,
            wait,
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        }
    }

    /// Runs `f` on a pooled connection; a connection that broke is closed.
    /// An idle connection may have died with the server (a restart), which
    /// its first use finds out: then `f` is tried once more on a new one.
    pub(super) fn with<T>(
        &self,
        mut f: impl FnMut(&mut Client) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut retried = false;
        loop {
            let (mut client, reused) = self.take()?;
            let out = f(&mut client);
            let broke = client.is_closed();
            let mut state = lock(&self.state);
            if broke {
                state.open -= 1;
            } else {
                state.idle.push(client);
            }
            drop(state);
            self.freed.notify_one();
            if out.is_err() && broke && reused && !retried {
                retried = true;
                continue;
            }
            return out;
        }
    }

    /// A connection, and whether it was idle in the pool (else new).
    fn take(&self) -> Result<(Client, bool), DbError> {
        let deadline = Instant::now() + self.wait;
        let mut state = lock(&self.state);
        loop {
            if let Some(c) = state.idle.pop() {
                if c.is_closed() {
                    state.open -= 1;
                    continue;
                }
                return Ok((c, true));
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match self.config.connect() {
                    Ok(c) => Ok((c, false)),
                    Err(e) => {
                        lock(&self.state).open -= 1;
                        self.freed.notify_one();
                        Err(DbError::Query(e))
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(DbError::Query(format!(
                    "all {} connections of store.postgres.pool_size are busy",
                    self.max
                )));
            }
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
