//! The writer thread: all of the log's file I/O after `open`.
//!
//! Each round takes every queued group at once, writes each to its segment
//! and, per `sync`, fsyncs once for all of them (group commit). A failed
//! write or fsync fails its waiters and cuts the file back to its last good
//! length, so the next round starts clean; if even that fails, the segment
//! is abandoned and appends move on to a new one. After each round, segments
//! no pin holds are deleted.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::WalSync;
use super::format::{self, HEADER_LEN};
use super::{Group, Shared, Waiter, WalError, segment_path, sync_dir};

pub(super) fn spawn(shared: Arc<Shared>) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("toolscore-wal".into())
        .spawn(move || Writer::new(shared).run())
}

struct Writer {
    shared: Arc<Shared>,
    file: Option<OpenSegment>,
    /// When the last fsync started.
    last_sync: Instant,
    /// A segment left after a failed truncation; its queued groups fail.
    abandoned: Option<u64>,
    /// Segments whose removal failed: not retried until restart.
    undeletable: Vec<u64>,
}

/// The segment being written.
struct OpenSegment {
    segment: u64,
    file: File,
    /// Bytes written and kept.
    len: u64,
    /// Bytes whose waiters were told they are durable: what a failed fsync
    /// cuts the file back to.
    acked_len: u64,
    synced_len: u64,
    dir_synced: bool,
    /// Written, waiting for an fsync (`sync` is `interval` or `always`).
    unsynced: Vec<Waiter>,
}

/// Marks the log closed however the thread ends, so appends fail `Closed`
/// instead of waiting for a writer that is gone.
struct ExitGuard(Arc<Shared>);

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.closed = true;
        let dropped: u64 = st.queue.drain(..).map(|g| g.bytes.len() as u64).sum();
        st.pending_bytes = st.pending_bytes.saturating_sub(dropped);
        self.0.publish(&st);
    }
}

impl Writer {
    fn new(shared: Arc<Shared>) -> Writer {
        Writer {
            shared,
            file: None,
            last_sync: Instant::now(),
            abandoned: None,
            undeletable: Vec::new(),
        }
    }

    fn run(mut self) {
        let _guard = ExitGuard(Arc::clone(&self.shared));
        loop {
            let (groups, closing) = self.wait();
            for group in groups {
                self.write_group(group);
            }
            let due = match self.shared.sync {
                WalSync::None => false,
                WalSync::Always => true,
                WalSync::Interval => self.last_sync.elapsed() >= self.shared.sync_interval,
            };
            if due || closing {
                self.sync_current();
            }
            self.delete_unheld();
            if closing {
                return;
            }
        }
    }

    /// Waits for queued groups, a deletion, close, or the interval fsync
    /// falling due; returns the groups taken and whether the log is closing.
    fn wait(&mut self) -> (Vec<Group>, bool) {
        let shared = Arc::clone(&self.shared);
        let mut st = shared.lock();
        loop {
            if st.closed || !st.queue.is_empty() || st.deletion_wanted {
                break;
            }
            let waiting = self.file.as_ref().is_some_and(|f| !f.unsynced.is_empty());
            if shared.sync == WalSync::Interval && waiting {
                let deadline = self.last_sync + shared.sync_interval;
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                st = shared
                    .wake
                    .wait_timeout(st, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            } else {
                st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        st.deletion_wanted = false;
        (std::mem::take(&mut st.queue), st.closed)
    }

    fn write_group(&mut self, group: Group) {
        if self.abandoned == Some(group.segment) {
            let e = io::Error::other("the segment was abandoned after a failed write");
            let e = WalError::io(what(&self.shared, group.segment, "writing"), e);
            self.fail_group(group, &e);
            return;
        }
        if self.file.as_ref().map(|f| f.segment) != Some(group.segment) {
            self.finish_current();
            if let Err(e) = self.create(group.segment) {
                self.shared.metrics.wal_write_errors.inc();
                tracing::warn!(error = %e, "cannot create a write-ahead log segment; its appends are refused");
                self.fail_group(group, &e);
                return;
            }
        }
        let Some(open) = self.file.as_mut() else {
            return;
        };
        let before = open.len;
        let written = write_at_end(open, &group.bytes);
        let n = group.bytes.len() as u64;
        match written {
            Ok(len) => {
                open.len = len;
                let mut st = self.shared.lock();
                st.pending_bytes -= n;
                st.set_size(open.segment, len);
                self.shared.publish(&st);
                drop(st);
                if self.shared.sync == WalSync::None {
                    open.acked_len = len;
                    complete(&self.shared, group.waiters);
                } else {
                    open.unsynced.extend(group.waiters);
                }
            }
            Err(e) => {
                self.shared.metrics.wal_write_errors.inc();
                let e = WalError::io(what(&self.shared, group.segment, "writing"), e);
                tracing::warn!(error = %e, "a write-ahead log write failed; its appends are refused");
                self.fail_group(group, &e);
                self.cut_back(before);
            }
        }
    }

    /// Leaves the current segment for a later one: fsynced first unless
    /// `sync` is `none`, so its waiters complete.
    fn finish_current(&mut self) {
        if self.shared.sync != WalSync::None {
            self.sync_current();
        }
        self.file = None;
    }

    fn create(&mut self, segment: u64) -> Result<(), WalError> {
        let path = segment_path(&self.shared.dir, segment);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| WalError::io(format!("creating {}", path.display()), e))?;
        let mut st = self.shared.lock();
        st.set_size(segment, 0);
        self.shared.publish(&st);
        drop(st);
        self.file = Some(OpenSegment {
            segment,
            file,
            len: 0,
            acked_len: 0,
            synced_len: 0,
            dir_synced: false,
            unsynced: Vec::new(),
        });
        Ok(())
    }

    /// Fsyncs the current segment (and, once, the directory that holds it)
    /// and completes its waiters.
    fn sync_current(&mut self) {
        let shared = Arc::clone(&self.shared);
        let Some(open) = self.file.as_mut() else {
            return;
        };
        if open.synced_len == open.len && open.dir_synced && open.unsynced.is_empty() {
            return;
        }
        let started = Instant::now();
        let mut result = Ok(());
        if !open.dir_synced {
            result = sync_dir(&shared.dir);
            open.dir_synced = result.is_ok();
        }
        if result.is_ok() {
            result = open.file.sync_data();
        }
        shared
            .metrics
            .wal_fsync_seconds
            .observe(started.elapsed().as_secs_f64());
        #[cfg(test)]
        shared
            .fsyncs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Intervals run from fsync start to fsync start: an fsync slower
        // than the interval is followed by the next at once, not after
        // another interval.
        self.last_sync = started;
        let waiters = std::mem::take(&mut open.unsynced);
        match result {
            Ok(()) => {
                open.synced_len = open.len;
                open.acked_len = open.len;
                complete(&shared, waiters);
            }
            Err(e) => {
                shared.metrics.wal_write_errors.inc();
                let e = WalError::io(what(&shared, open.segment, "fsyncing"), e);
                tracing::warn!(error = %e, "a write-ahead log fsync failed; its appends are refused");
                fail(waiters, &e);
                let acked = open.acked_len;
                self.cut_back(acked);
            }
        }
    }

    /// Cuts the current segment back to `len` after a failed write or fsync,
    /// or abandons it when that fails too.
    fn cut_back(&mut self, len: u64) {
        let Some(open) = self.file.as_mut() else {
            return;
        };
        let cut = open
            .file
            .set_len(len)
            .and_then(|()| open.file.seek(SeekFrom::Start(len)));
        let segment = open.segment;
        match cut {
            Ok(_) => {
                open.len = len;
                open.acked_len = open.acked_len.min(len);
                open.synced_len = open.synced_len.min(len);
                let mut st = self.shared.lock();
                st.set_size(segment, len);
                self.shared.publish(&st);
            }
            Err(e) => {
                tracing::error!(
                    file = %segment_path(&self.shared.dir, segment).display(),
                    error = %e,
                    "cannot cut a write-ahead log segment back after a failed write; \
                     it is abandoned and its damaged tail will be set aside at the next start"
                );
                self.abandon();
            }
        }
    }

    fn abandon(&mut self) {
        let Some(open) = self.file.take() else { return };
        let segment = open.segment;
        let e = io::Error::other("segment abandoned");
        let e = WalError::io(what(&self.shared, segment, "writing"), e);
        fail(open.unsynced, &e);
        let size = open.file.metadata().map_or(open.len, |m| m.len());
        self.abandoned = Some(segment);
        let mut st = self.shared.lock();
        st.set_size(segment, size);
        if st.head == segment {
            st.head += 1;
            st.head_bytes = 0;
            st.head_records = 0;
        }
        let (dead, live): (Vec<Group>, Vec<Group>) = std::mem::take(&mut st.queue)
            .into_iter()
            .partition(|g| g.segment == segment);
        st.queue = live;
        for g in &dead {
            st.pending_bytes -= g.bytes.len() as u64;
        }
        self.shared.publish(&st);
        drop(st);
        for g in dead {
            fail(g.waiters, &e);
        }
    }

    /// Fails a group that was not written, and takes its bytes off the books.
    fn fail_group(&self, group: Group, e: &WalError) {
        let n = group.bytes.len() as u64;
        let mut st = self.shared.lock();
        st.pending_bytes -= n;
        if group.segment == st.head {
            st.head_bytes = st.head_bytes.saturating_sub(n);
            st.head_records = st.head_records.saturating_sub(group.waiters.len() as u64);
        }
        self.shared.publish(&st);
        drop(st);
        fail(group.waiters, e);
    }

    /// Deletes every segment no pin holds, other than the head, once
    /// deletion is allowed.
    fn delete_unheld(&mut self) {
        let doomed: Vec<u64> = {
            let st = self.shared.lock();
            if !st.deletion_allowed {
                return;
            }
            let current = self.file.as_ref().map(|f| f.segment);
            st.disk
                .keys()
                .copied()
                .take_while(|s| *s < st.head)
                .filter(|s| !st.holds.contains_key(s))
                .filter(|s| Some(*s) != current && !self.undeletable.contains(s))
                .filter(|s| !st.queue.iter().any(|g| g.segment == *s))
                .collect()
        };
        for segment in doomed {
            let path = segment_path(&self.shared.dir, segment);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::error!(
                        file = %path.display(), error = %e,
                        "cannot delete a write-ahead log segment; it counts against max_bytes until removed"
                    );
                    self.undeletable.push(segment);
                    continue;
                }
            }
            let mut st = self.shared.lock();
            st.remove(segment);
            self.shared.publish(&st);
        }
    }
}

fn what(shared: &Shared, segment: u64, doing: &str) -> String {
    format!("{doing} {}", segment_path(&shared.dir, segment).display())
}

/// Writes `bytes` after the segment's good length (the header first, into a
/// new file); returns the new length.
fn write_at_end(open: &mut OpenSegment, bytes: &[u8]) -> io::Result<u64> {
    let mut len = open.len;
    if len == 0 {
        open.file.write_all(&format::encode_header())?;
        len = HEADER_LEN as u64;
    }
    open.file.write_all(bytes)?;
    Ok(len + bytes.len() as u64)
}

fn complete(shared: &Shared, waiters: Vec<Waiter>) {
    for w in waiters {
        shared
            .metrics
            .wal_append_seconds
            .observe(w.since.elapsed().as_secs_f64());
        let _ = w.tx.send(Ok(()));
    }
}

fn fail(waiters: Vec<Waiter>, e: &WalError) {
    for w in waiters {
        let _ = w.tx.send(Err(e.duplicate()));
    }
}
