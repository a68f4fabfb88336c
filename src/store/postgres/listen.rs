//! The listener: a thread on a connection of its own, `LISTEN`ing for the
//! commits every replica announces, reconnecting with backoff.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use super::{CHANNEL, Connector, describe};
use crate::span::TraceId;
use crate::store::db::OnCommit;

/// `own`: the server process of this process's writer connection, whose
/// announcements are skipped (the writer published those commits itself;
/// reading them back would cost a read each and publish them twice).
pub(super) fn run(config: &Connector, what: &str, own: &AtomicI32, on_commit: &OnCommit) {
    let mut backoff = Duration::from_millis(100);
    'conn: loop {
        let mut client = match config.connect() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(database = %what, error = %e, "cannot listen for other replicas' results; retrying");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")) {
            tracing::warn!(database = %what, error = %describe(&e), "LISTEN failed; retrying");
            std::thread::sleep(backoff);
            continue;
        }
        backoff = Duration::from_millis(100);
        loop {
            let mut notes = client.notifications();
            let mut it = notes.timeout_iter(Duration::from_secs(1));
            loop {
                match postgres::fallible_iterator::FallibleIterator::next(&mut it) {
                    Ok(Some(n)) if n.process_id() == own.load(Ordering::Relaxed) => {}
                    Ok(Some(n)) => {
                        let Some((id, rev)) = n.payload().split_once(':') else {
                            continue;
                        };
                        let (Ok(id), Ok(rev)) = (TraceId::parse_hex(id), rev.parse::<u32>()) else {
                            continue;
                        };
                        if !on_commit(Some((id, rev))) {
                            return; // the store is gone
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(database = %what, error = %describe(&e), "the listening connection broke; reconnecting");
                        continue 'conn;
                    }
                }
            }
            if !on_commit(None) {
                return;
            }
        }
    }
}
