//! Claims on running LLM judgements. A judge's score is stored `pending`
//! before its model answers; if the replica running it is killed, nobody
//! would ever answer it. So each pending score names its replica
//! (`pending_owner`), each replica keeps a row in `toolscore_replicas`
//! whose `alive_until` it pushes forward every quarter of the lease, and
//! any replica settles as `skipped` the pending scores whose replica's
//! claim ran out, announcing the change as a commit is announced.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use postgres::Client;

use super::CHANNEL;
use crate::store::lock;
use crate::store::rows::unix_nanos;

/// Pending scores written before claims existed (no owner) are settled
/// once their trace was stored this many leases ago: older versions'
/// replicas may still be judging them during a rolling upgrade.
const UNCLAIMED_AFTER_LEASES: u32 = 10;

/// What a settled score's `error` says after its evaluator's id.
const SETTLED: &str = " was not judged: the replica judging it stopped before the model answered";

pub(super) struct Claims {
    /// This process: its host, its process ID and a random part, so a
    /// restarted process (whose PID may be the same, in a container) never
    /// takes over its predecessor's claims.
    owner: String,
    lease: Duration,
    /// When the claim was last renewed.
    renewed: Mutex<Option<Instant>>,
}

impl Claims {
    pub(super) fn new(lease: Duration) -> Claims {
        use std::hash::BuildHasher;
        let random = std::collections::hash_map::RandomState::new().hash_one(SystemTime::now());
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        Claims {
            owner: format!("{host}/{}/{random:016x}", std::process::id()),
            lease,
            renewed: Mutex::new(None),
        }
    }

    pub(super) fn owner(&self) -> &str {
        &self.owner
    }

    fn until(&self, now: SystemTime) -> i64 {
        unix_nanos(now + self.lease)
    }

    /// Writes this replica's claim (at start-up, and when it was
    /// dropped: another replica found it expired).
    pub(super) fn claim(&self, c: &mut Client, now: SystemTime) -> Result<(), postgres::Error> {
        c.execute(
            "INSERT INTO toolscore_replicas (owner, alive_until) VALUES ($1, $2)
             ON CONFLICT (owner) DO UPDATE SET alive_until = excluded.alive_until",
            &[&self.owner, &self.until(now)],
        )?;
        *lock(&self.renewed) = Some(Instant::now());
        Ok(())
    }

    /// Renews the claim when a quarter of the lease has passed, then
    /// settles the judgements of replicas whose claims ran out; how many.
    pub(super) fn tend(&self, c: &mut Client, now: SystemTime) -> Result<u64, postgres::Error> {
        let due = lock(&self.renewed).is_none_or(|at| at.elapsed() >= self.lease / 4);
        if due {
            self.claim(c, now)?;
        }
        let now_ns = unix_nanos(now);
        let unclaimed_before = unix_nanos(
            now.checked_sub(self.lease * UNCLAIMED_AFTER_LEASES)
                .unwrap_or(SystemTime::UNIX_EPOCH),
        );
        let settled = c.query(
            "WITH gone AS (
                 DELETE FROM toolscore_replicas WHERE alive_until < $1
             ), settled AS (
                 UPDATE toolscore_scores s
                 SET status = 'skipped', pending_owner = NULL,
                     error = s.evaluator_id || convert_to($2, 'UTF8')
                 WHERE s.status = 'pending'
                   AND CASE WHEN s.pending_owner IS NULL
                       THEN EXISTS (SELECT 1 FROM toolscore_traces t
                                    WHERE t.trace_id = s.trace_id AND t.stored_at < $3)
                       ELSE NOT EXISTS (SELECT 1 FROM toolscore_replicas r
                                        WHERE r.owner = s.pending_owner AND r.alive_until >= $1)
                       END
                 RETURNING s.trace_id
             )
             SELECT pg_notify($4, encode(t.trace_id, 'hex') || ':' || t.revision),
                    (SELECT count(*) FROM settled)
             FROM toolscore_traces t
             WHERE t.trace_id IN (SELECT trace_id FROM settled)",
            &[&now_ns, &SETTLED, &unclaimed_before, &CHANNEL],
        )?;
        Ok(settled
            .first()
            .and_then(|r| r.try_get::<_, i64>(1).ok())
            .map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }
}
