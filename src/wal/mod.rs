//! The write-ahead log of accepted OTLP requests.
//!
//! A receiver appends a request's bytes and acknowledges the client only
//! once [`Appended::durable`] resolves, so a crash loses nothing that was
//! acknowledged: at start the service reads the log back ([`Replay`]) and
//! reassembles what was not yet stored. Segments are deleted once no
//! [`Pin`] holds them, that is once every trace in them is stored.
//!
//! One writer thread does all the file I/O after `open` (`writer.rs`).
//! Appends only copy bytes into the current group under a mutex; every
//! append waiting when the writer wakes shares its one write and one fsync
//! (group commit). The format is in [`mod@format`], reading back and setting
//! damaged tails aside in `replay.rs`, hold counting in `pin.rs`.
//!
//! Invariants: appends and pins do no I/O; a segment never holds a partial
//! record followed by good ones; a segment is never deleted while a pin
//! holds it, while it is the head, or before `replay_done`.

mod config;
pub mod format;
mod pin;
mod replay;
mod writer;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::telemetry::Metrics;

pub use config::{WalConfig, WalSync};
pub use format::Kind;
pub use pin::Pin;
pub use replay::{Record, Replay};

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("the write-ahead log is full ({max_bytes} bytes)")]
    Full { max_bytes: u64 },
    #[error("the write-ahead log is closed")]
    Closed,
    #[error("write-ahead log: {what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("{path} is not a segment of a toolscore write-ahead log")]
    Foreign { path: String },
    #[error("{path} is in write-ahead log format {found}; this build reads up to {known}")]
    NewerFormat {
        path: String,
        found: u32,
        known: u32,
    },
    #[error("a record of {bytes} bytes is larger than the write-ahead log can hold")]
    TooLarge { bytes: usize },
    #[error(
        "{dir} is the write-ahead log of another running toolscore (one process per directory)"
    )]
    InUse { dir: String },
}

impl WalError {
    fn io(what: impl Into<String>, source: io::Error) -> WalError {
        WalError::Io {
            what: what.into(),
            source,
        }
    }

    /// The same error for another waiter (`io::Error` is not `Clone`).
    fn duplicate(&self) -> WalError {
        match self {
            WalError::Io { what, source } => WalError::Io {
                what: what.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            WalError::Full { max_bytes } => WalError::Full {
                max_bytes: *max_bytes,
            },
            WalError::Foreign { path } => WalError::Foreign { path: path.clone() },
            WalError::NewerFormat { path, found, known } => WalError::NewerFormat {
                path: path.clone(),
                found: *found,
                known: *known,
            },
            WalError::TooLarge { bytes } => WalError::TooLarge { bytes: *bytes },
            WalError::InUse { dir } => WalError::InUse { dir: dir.clone() },
            WalError::Closed => WalError::Closed,
        }
    }
}

/// The write-ahead log. Clones share one log; dropping the last clone closes it.
#[derive(Clone)]
pub struct Wal {
    owner: Arc<Owner>,
}

/// Owns the writer thread: its `Drop` closes the log. Pins and the thread
/// itself hold only [`Shared`], so they do not keep the log open.
struct Owner {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// `LOCK` in the directory, locked until the log is closed: a second
    /// process on the same directory would interleave its segments.
    lock: Mutex<Option<std::fs::File>>,
}

/// What appends, pins and the writer thread share.
struct Shared {
    dir: PathBuf,
    max_bytes: u64,
    segment_bytes: u64,
    sync: WalSync,
    sync_interval: Duration,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
    /// Wakes the writer: data queued, a segment became deletable, or close.
    wake: Condvar,
    #[cfg(test)]
    fsyncs: std::sync::atomic::AtomicU64,
}

struct State {
    /// Appended and not yet taken by the writer, in log order; one group per
    /// segment (a rotation starts a new group).
    queue: Vec<Group>,
    /// Bytes appended and not yet on disk (queued, or being written).
    pending_bytes: u64,
    /// The segment appends go to.
    head: u64,
    /// Record bytes in the head, written or pending (its header excluded).
    head_bytes: u64,
    head_records: u64,
    /// Segment files on disk and their sizes.
    disk: BTreeMap<u64, u64>,
    disk_bytes: u64,
    /// Pins per segment; absent means none.
    holds: BTreeMap<u64, usize>,
    deletion_allowed: bool,
    deletion_wanted: bool,
    closed: bool,
}

struct Group {
    segment: u64,
    bytes: Vec<u8>,
    waiters: Vec<Waiter>,
}

struct Waiter {
    tx: oneshot::Sender<Result<(), WalError>>,
    since: Instant,
}

impl State {
    fn set_size(&mut self, segment: u64, size: u64) {
        let old = self.disk.insert(segment, size).unwrap_or(0);
        self.disk_bytes = self.disk_bytes - old + size;
    }

    fn remove(&mut self, segment: u64) {
        if let Some(size) = self.disk.remove(&segment) {
            self.disk_bytes -= size;
        }
    }

    fn bytes(&self) -> u64 {
        self.disk_bytes + self.pending_bytes
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, st: &State) {
        let m = &self.metrics;
        m.wal_bytes
            .set(i64::try_from(st.bytes()).unwrap_or(i64::MAX));
        m.wal_segments
            .set(i64::try_from(st.disk.len()).unwrap_or(i64::MAX));
    }
}

pub(crate) fn segment_path(dir: &Path, segment: u64) -> PathBuf {
    dir.join(format!("{segment:020}.wal"))
}

/// Makes the directory's entries (files created, truncated or removed) durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

impl Wal {
    /// Opens (creating) `config.dir`, checks existing segments' headers, and
    /// starts the writer thread. Existing segments are kept for replay; new
    /// appends go to a new segment numbered after the last existing one.
    /// Deleting segments is off until [`Wal::replay_done`]. Blocking.
    pub fn open(config: &WalConfig, metrics: Arc<Metrics>) -> Result<(Wal, Replay), WalError> {
        let dir = config.dir.clone();
        std::fs::create_dir_all(&dir)
            .map_err(|e| WalError::io(format!("creating {}", dir.display()), e))?;
        let lock_path = dir.join("LOCK");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| WalError::io(format!("opening {}", lock_path.display()), e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(WalError::InUse {
                    dir: dir.display().to_string(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(WalError::io(format!("locking {}", lock_path.display()), e));
            }
        }
        let existing = replay::scan(&dir)?;
        let mut disk = BTreeMap::new();
        for s in &existing.segments {
            disk.insert(s.segment, s.size);
        }
        let disk_bytes = disk.values().sum();
        let shared = Arc::new(Shared {
            dir,
            max_bytes: config.max_bytes.get(),
            segment_bytes: config.segment_bytes.get(),
            sync: config.sync,
            sync_interval: Duration::from_millis(config.sync_interval_ms.get()),
            metrics,
            state: Mutex::new(State {
                queue: Vec::new(),
                pending_bytes: 0,
                head: existing.last + 1,
                head_bytes: 0,
                head_records: 0,
                disk,
                disk_bytes,
                holds: BTreeMap::new(),
                deletion_allowed: false,
                deletion_wanted: false,
                closed: false,
            }),
            wake: Condvar::new(),
            #[cfg(test)]
            fsyncs: std::sync::atomic::AtomicU64::new(0),
        });
        shared.publish(&shared.lock());
        let thread = writer::spawn(Arc::clone(&shared))
            .map_err(|e| WalError::io("starting the writer thread", e))?;
        let replay = Replay::new(Arc::clone(&shared), existing.segments);
        let owner = Owner {
            shared,
            thread: Mutex::new(Some(thread)),
            lock: Mutex::new(Some(lock)),
        };
        Ok((
            Wal {
                owner: Arc::new(owner),
            },
            replay,
        ))
    }

    /// Copies the record into the current group and returns at once with the
    /// segment it will be in and a handle to await its durability. No I/O
    /// happens on the caller's thread.
    ///
    /// Refused with [`WalError::Full`] when the log (segment files plus
    /// appends not yet written) would exceed `max_bytes` with this record,
    /// [`WalError::TooLarge`] when the record alone could never fit, and
    /// [`WalError::Closed`] after [`Wal::close`].
    pub fn append(
        &self,
        kind: Kind,
        arrived_unix_nanos: u64,
        payload: &[u8],
    ) -> Result<Appended, WalError> {
        let shared = &self.owner.shared;
        let len = format::record_len(payload.len()) as u64;
        let header = format::HEADER_LEN as u64;
        if payload.len() > format::MAX_PAYLOAD || len + header > shared.max_bytes {
            return Err(WalError::TooLarge {
                bytes: payload.len(),
            });
        }
        let head = format::record_head(kind, arrived_unix_nanos, payload);
        let (tx, rx) = oneshot::channel();
        let waiter = Waiter {
            tx,
            since: Instant::now(),
        };
        let mut st = shared.lock();
        if st.closed {
            return Err(WalError::Closed);
        }
        let rotate = st.head_records > 0 && header + st.head_bytes + len > shared.segment_bytes;
        let opens_segment = rotate || st.head_bytes == 0;
        let needed = len + if opens_segment { header } else { 0 };
        if st.bytes() + needed > shared.max_bytes {
            return Err(WalError::Full {
                max_bytes: shared.max_bytes,
            });
        }
        if rotate {
            st.head += 1;
            st.head_bytes = 0;
            st.head_records = 0;
        }
        let segment = st.head;
        st.head_bytes += len;
        st.head_records += 1;
        st.pending_bytes += len;
        let group = match st.queue.last_mut() {
            Some(g) if g.segment == segment => g,
            _ => {
                st.queue.push(Group {
                    segment,
                    bytes: Vec::new(),
                    waiters: Vec::new(),
                });
                let last = st.queue.len() - 1;
                &mut st.queue[last]
            }
        };
        group.bytes.extend_from_slice(&head);
        group.bytes.extend_from_slice(payload);
        group.waiters.push(waiter);
        *st.holds.entry(segment).or_default() += 1;
        shared.publish(&st);
        drop(st);
        shared.wake.notify_all();
        let pin = Pin {
            shared: Some(Arc::clone(shared)),
            segments: vec![segment],
        };
        Ok(Appended { segment, rx, pin })
    }

    /// An empty pin on this log.
    pub fn pin(&self) -> Pin {
        Pin {
            shared: Some(Arc::clone(&self.owner.shared)),
            segments: Vec::new(),
        }
    }

    /// Replay has pinned what it needs: unpinned segments other than the
    /// head may now be deleted.
    pub fn replay_done(&self) {
        let shared = &self.owner.shared;
        let mut st = shared.lock();
        st.deletion_allowed = true;
        st.deletion_wanted = true;
        drop(st);
        shared.wake.notify_all();
    }

    /// Writes and fsyncs (whatever `sync` says) what is queued, then stops
    /// the writer thread; later appends fail with [`WalError::Closed`].
    /// Idempotent; a second caller waits for the first to finish. Blocking.
    pub fn close(&self) {
        self.owner.close();
    }

    /// Whether the log holds more than half its `max_bytes`: the assembler
    /// then stops keeping evaluated traces for late spans (their segments
    /// go), before receivers have to refuse.
    pub fn under_pressure(&self) -> bool {
        let st = self.owner.shared.lock();
        st.bytes() > self.owner.shared.max_bytes / 2
    }

    /// Bytes on disk plus appended and not yet written.
    pub fn bytes(&self) -> u64 {
        self.owner.shared.lock().bytes()
    }

    /// Segment files on disk.
    pub fn segments(&self) -> usize {
        self.owner.shared.lock().disk.len()
    }

    #[cfg(test)]
    fn fsyncs(&self) -> u64 {
        self.owner
            .shared
            .fsyncs
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Owner {
    fn close(&self) {
        let mut thread = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        self.shared.lock().closed = true;
        self.shared.wake.notify_all();
        if let Some(t) = thread.take()
            && t.join().is_err()
        {
            tracing::error!("the write-ahead log's writer thread panicked");
        }
        // Everything is written: another process may take the directory.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.close();
    }
}

/// An accepted append: the segment its record is in, and its durability.
#[derive(Debug)]
pub struct Appended {
    pub segment: u64,
    rx: oneshot::Receiver<Result<(), WalError>>,
    /// Holds `segment` from the append until this handle is dropped, so the
    /// segment cannot be deleted before the caller pins it.
    pin: Pin,
}

impl Appended {
    /// Resolves once the record is written (and synced, per `sync`); an
    /// error means it may not be in the log: do not acknowledge it.
    pub async fn durable(self) -> Result<(), WalError> {
        let Appended { rx, pin, .. } = self;
        let result = rx.await.unwrap_or(Err(WalError::Closed));
        drop(pin);
        result
    }

    /// A pin holding the record's segment, taken at the append. Holding it
    /// (rather than `Pin::hold` after the append) leaves no moment in which
    /// the segment is unheld. Later calls return an empty pin.
    pub fn take_pin(&mut self) -> Pin {
        std::mem::take(&mut self.pin)
    }
}

#[cfg(test)]
mod tests;
