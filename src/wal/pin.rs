//! Pins: what keeps a segment from being deleted while a trace in it is not
//! yet stored. Counts live in the log's shared state; a pin remembers which
//! segments it counted, so dropping it gives back exactly those.

use std::sync::Arc;

use super::{Shared, Wal};

impl Shared {
    pub(super) fn hold(&self, segment: u64) {
        *self.lock().holds.entry(segment).or_default() += 1;
    }

    pub(super) fn release(&self, segments: &[u64]) {
        let mut st = self.lock();
        let mut wake = false;
        for s in segments {
            let Some(count) = st.holds.get_mut(s) else {
                continue;
            };
            *count = count.saturating_sub(1);
            if *count == 0 {
                st.holds.remove(s);
                wake |= st.deletion_allowed && *s < st.head;
            }
        }
        if wake {
            st.deletion_wanted = true;
            drop(st);
            self.wake.notify_all();
        }
    }
}

/// A hold on segments: while any pin holds a segment, it is not deleted.
/// Dropping releases. A pin belongs to one log.
#[derive(Default)]
pub struct Pin {
    pub(super) shared: Option<Arc<Shared>>,
    /// Few (the segments one trace's spans arrived in): a Vec, scanned.
    pub(super) segments: Vec<u64>,
}

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pin")
            .field("segments", &self.segments)
            .finish()
    }
}

impl Pin {
    /// Holds `segment` too; a no-op if this pin already holds it.
    pub fn hold(&mut self, wal: &Wal, segment: u64) {
        let theirs = &wal.owner.shared;
        match &self.shared {
            None => self.shared = Some(Arc::clone(theirs)),
            Some(mine) if !Arc::ptr_eq(mine, theirs) => {
                // A bug: keep the segment held for good rather than risk
                // deleting what someone needs.
                tracing::error!(
                    segment,
                    "a pin of one write-ahead log was asked to hold another's"
                );
                theirs.hold(segment);
                return;
            }
            Some(_) => {}
        }
        if !self.segments.contains(&segment) {
            self.segments.push(segment);
            theirs.hold(segment);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Another pin on the same segments (each held once more): a trace's
    /// buffer keeps its segments for late spans while its result, which
    /// holds them too, waits to be stored.
    pub fn share(&self) -> Pin {
        let Some(shared) = &self.shared else {
            return Pin::default();
        };
        for s in &self.segments {
            shared.hold(*s);
        }
        Pin {
            shared: Some(Arc::clone(shared)),
            segments: self.segments.clone(),
        }
    }

    /// Moves every hold of `other` into this pin.
    pub fn merge(&mut self, mut other: Pin) {
        let theirs_segments = std::mem::take(&mut other.segments);
        let Some(theirs) = other.shared.take() else {
            return;
        };
        if theirs_segments.is_empty() {
            return;
        }
        let mine = match &self.shared {
            None => &*self.shared.insert(theirs),
            Some(mine) if !Arc::ptr_eq(mine, &theirs) => {
                tracing::error!(
                    segments = ?theirs_segments,
                    "pins of two write-ahead logs merged; the other log's holds are kept for good"
                );
                return;
            }
            Some(mine) => mine,
        };
        let mut duplicates = Vec::new();
        for s in theirs_segments {
            if self.segments.contains(&s) {
                duplicates.push(s);
            } else {
                self.segments.push(s);
            }
        }
        if !duplicates.is_empty() {
            mine.release(&duplicates);
        }
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared
            && !self.segments.is_empty()
        {
            shared.release(&self.segments);
        }
    }
}
