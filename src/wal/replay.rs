//! Reading the log back at start: the segments found at open, in order,
//! one segment in memory at a time.
//!
//! A torn or damaged record ends its segment: the records before it are
//! returned, the bytes from it to the end of the file are set aside in
//! `{segment}.quarantine` beside it, and the segment is cut back to its good
//! prefix, so the damage is neither replayed nor lost. Reading goes on with
//! the next segment.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::{self, Damage, HEADER_LEN, Header, Kind};
use super::{Shared, WalError, segment_path, sync_dir};

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The segment it is in: what to [`super::Pin::hold`] until it is stored.
    pub segment: u64,
    pub kind: Kind,
    pub arrived_unix_nanos: u64,
    pub payload: Vec<u8>,
}

/// A segment found at open.
pub(super) struct Found {
    pub segment: u64,
    pub size: u64,
}

pub(super) struct Scan {
    pub segments: Vec<Found>,
    /// The highest segment number seen (0 when none): new ones come after.
    pub last: u64,
}

/// Lists the directory's segments, oldest first, checking each header.
/// Files being created when the process stopped (a torn header, no
/// records) are removed.
pub(super) fn scan(dir: &Path) -> Result<Scan, WalError> {
    let listing = |e| WalError::io(format!("listing {}", dir.display()), e);
    let mut numbered = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(listing)? {
        let entry = entry.map_err(listing)?;
        if let Some(segment) = entry.file_name().to_str().and_then(parse_segment_name) {
            numbered.push(segment);
        }
    }
    numbered.sort_unstable();
    let last = numbered.last().copied().unwrap_or(0);
    let mut segments = Vec::with_capacity(numbered.len());
    for segment in numbered {
        let path = segment_path(dir, segment);
        let mut head = Vec::with_capacity(HEADER_LEN);
        let size = std::fs::File::open(&path)
            .and_then(|f| {
                let size = f.metadata()?.len();
                f.take(HEADER_LEN as u64).read_to_end(&mut head)?;
                Ok(size)
            })
            .map_err(|e| WalError::io(format!("reading {}", path.display()), e))?;
        match header_check(&path, &head)? {
            true => segments.push(Found { segment, size }),
            false => {
                tracing::warn!(
                    file = %path.display(), bytes = size,
                    "removing a write-ahead log segment whose creation was cut short (it holds no records)"
                );
                std::fs::remove_file(&path)
                    .map_err(|e| WalError::io(format!("removing {}", path.display()), e))?;
            }
        }
    }
    Ok(Scan { segments, last })
}

/// `{seq:020}.wal`.
fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".wal")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Ok(true): a segment to read; Ok(false): a torn header (no records).
fn header_check(path: &Path, head: &[u8]) -> Result<bool, WalError> {
    let path_text = || path.display().to_string();
    match format::check_header(head) {
        Header::Valid => Ok(true),
        Header::Torn => Ok(false),
        Header::Foreign => Err(WalError::Foreign { path: path_text() }),
        Header::Newer { found } => Err(WalError::NewerFormat {
            path: path_text(),
            found,
            known: format::VERSION,
        }),
    }
}

/// The records of the segments that were in the log at open.
pub struct Replay {
    shared: Arc<Shared>,
    /// Left to read, oldest last (popped from the end).
    segments: Vec<u64>,
    quarantined: u64,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("segments_left", &self.segments.len())
            .field("quarantined", &self.quarantined)
            .finish()
    }
}

impl Replay {
    pub(super) fn new(shared: Arc<Shared>, found: Vec<Found>) -> Replay {
        let segments = found.iter().rev().map(|f| f.segment).collect();
        Replay {
            shared,
            segments,
            quarantined: 0,
        }
    }

    /// The next segment's records, in log order. A damaged tail is set aside
    /// (see the module doc) and reading goes on with the next segment. An
    /// I/O error is returned and ends the iteration. Blocking.
    pub fn next_segment(&mut self) -> Option<Result<Vec<Record>, WalError>> {
        let segment = self.segments.pop()?;
        let read = self.read(segment);
        if read.is_err() {
            self.segments.clear();
        }
        Some(read)
    }

    /// Damaged bytes set aside so far.
    pub fn quarantined_bytes(&self) -> u64 {
        self.quarantined
    }

    fn read(&mut self, segment: u64) -> Result<Vec<Record>, WalError> {
        let path = segment_path(&self.shared.dir, segment);
        let data = std::fs::read(&path)
            .map_err(|e| WalError::io(format!("reading {}", path.display()), e))?;
        if !header_check(&path, &data)? {
            return Ok(Vec::new());
        }
        let mut records = Vec::new();
        let mut at = HEADER_LEN;
        loop {
            match format::decode_record(&data[at..]) {
                Ok(None) => break,
                Ok(Some(d)) => {
                    records.push(Record {
                        segment,
                        kind: d.kind,
                        arrived_unix_nanos: d.arrived_unix_nanos,
                        payload: d.payload.to_vec(),
                    });
                    at += d.len;
                }
                Err(damage) => {
                    self.quarantine(segment, &path, &data[at..], at as u64, damage)?;
                    break;
                }
            }
        }
        Ok(records)
    }

    /// Copies `tail` (from `offset` to the end) to the quarantine file, then
    /// cuts the segment back to `offset`, each made durable before the next.
    fn quarantine(
        &mut self,
        segment: u64,
        path: &Path,
        tail: &[u8],
        offset: u64,
        damage: Damage,
    ) -> Result<(), WalError> {
        let aside = quarantine_path(path);
        let io_err = |what: &str, p: &Path| {
            let what = format!("{what} {}", p.display());
            move |e: io::Error| WalError::io(what, e)
        };
        let mut q = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&aside)
            .map_err(io_err("opening", &aside))?;
        q.write_all(tail)
            .and_then(|()| q.sync_all())
            .map_err(io_err("writing", &aside))?;
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_err("opening", path))?;
        f.set_len(offset)
            .and_then(|()| f.sync_all())
            .map_err(io_err("truncating", path))?;
        sync_dir(&self.shared.dir).map_err(io_err("syncing", &self.shared.dir))?;

        let bytes = tail.len() as u64;
        self.quarantined += bytes;
        self.shared.metrics.wal_quarantined_bytes.inc_by(bytes);
        tracing::warn!(
            file = %path.display(), offset, bytes, reason = %damage, quarantine = %aside.display(),
            "a write-ahead log segment ends in damaged bytes; they are set aside and not replayed"
        );
        let mut st = self.shared.lock();
        if st.disk.contains_key(&segment) {
            st.set_size(segment, offset);
        }
        self.shared.publish(&st);
        Ok(())
    }
}

fn quarantine_path(segment: &Path) -> PathBuf {
    let mut name = segment
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".quarantine");
    segment.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_are_twenty_digits() {
        assert_eq!(parse_segment_name("00000000000000000001.wal"), Some(1));
        assert_eq!(
            parse_segment_name("18446744073709551615.wal"),
            Some(u64::MAX)
        );
        assert_eq!(parse_segment_name("1.wal"), None);
        assert_eq!(
            parse_segment_name("00000000000000000001.wal.quarantine"),
            None
        );
        assert_eq!(parse_segment_name("0000000000000000000x.wal"), None);
        assert_eq!(parse_segment_name("99999999999999999999.wal"), None);
    }

    #[test]
    fn quarantine_sits_beside_its_segment() {
        let p = Path::new("/d/00000000000000000003.wal");
        assert_eq!(
            quarantine_path(p),
            Path::new("/d/00000000000000000003.wal.quarantine")
        );
    }
}
