use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::OnTimeout;
use super::core::{Limits, Push, Reason, Shard};
use crate::record::{Records, Run, Spans};
use crate::span::{KeepAttributes, Span, SpanId, TraceId};

fn limits() -> Limits {
    Limits {
        grace: Duration::from_millis(1000),
        idle_timeout: Duration::from_secs(300),
        max_age: Duration::from_secs(3600),
        late_window: Duration::from_secs(60),
        on_timeout: OnTimeout::Evaluate,
        max_traces: 100,
        max_spans_per_trace: 100,
        max_bytes: 1 << 30,
        max_traces_per_service: 0,
        keys: std::sync::Arc::new(KeepAttributes::default()),
    }
}

/// A request's records of spans built here.
fn records(spans: &[Span]) -> Records {
    Records::from_spans(spans, &limits().keys)
}

fn span(trace: u8, id: u8, parent: Option<u8>) -> Span {
    Span {
        trace_id: TraceId([trace; 16]),
        span_id: SpanId([id; 8]),
        parent_span_id: parent.map(|p| SpanId([p; 8])),
        name: format!("s{id}"),
        start_time_unix_nano: u64::from(id),
        end_time_unix_nano: u64::from(id) + 1,
        attributes: vec![],
        service_name: None,
        scope_name: None,
    }
}

/// The driver's runs of one trace's spans, for spans given as `Span`s.
fn runs(spans: &[Span]) -> Vec<usize> {
    let request = records(spans);
    let idx: Vec<usize> = (0..spans.len()).collect();
    let runs = super::driver::runs(&request, &idx);
    for (k, run) in runs.iter().enumerate() {
        let bytes: usize = (k + 1..=k + run.spans)
            .map(|j| request.record_size(j))
            .sum();
        assert_eq!(run.bytes, bytes, "a run's bytes are its spans' records");
    }
    runs.iter().map(|r| r.spans).collect()
}

fn ids(spans: &Spans) -> BTreeSet<u8> {
    spans.iter().map(|s| s.span_id.0[0]).collect()
}

#[test]
fn a_trace_is_ready_only_after_its_root_and_the_grace_period() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert!(
        s.expire(t0 + Duration::from_secs(10)).is_empty(),
        "no root yet"
    );
    let root_at = t0 + Duration::from_secs(10);
    assert_eq!(s.push(span(1, 1, None), root_at), Push::Accepted);
    assert_eq!(
        s.next_deadline(),
        Some(root_at + Duration::from_millis(1000))
    );
    assert!(s.expire(root_at + Duration::from_millis(999)).is_empty());
    // A child inside the grace period joins the trace.
    assert_eq!(
        s.push(span(1, 3, Some(1)), root_at + Duration::from_millis(500)),
        Push::Accepted
    );
    let ready = s.expire(root_at + Duration::from_millis(1000));
    assert_eq!(ready.len(), 1);
    let r = &ready[0];
    assert!(r.complete);
    assert_eq!((r.revision, r.reason), (1, Reason::Complete));
    assert_eq!(ids(&r.spans), BTreeSet::from([1, 2, 3]));
    assert_eq!(r.root_arrived, Some(root_at));
    assert_eq!(s.open_traces(), 0);
}

#[test]
fn duplicates_are_accepted_once() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    assert_eq!(s.push(span(1, 1, None), t0), Push::Accepted);
    assert_eq!(s.push(span(1, 1, None), t0), Push::Duplicate);
    let bytes = s.bytes();
    assert_eq!(s.push(span(1, 1, None), t0), Push::Duplicate);
    assert_eq!(s.bytes(), bytes);
    let r = s.expire(t0 + Duration::from_secs(2));
    assert_eq!(r[0].spans.len(), 1);
}

#[test]
fn a_late_span_re_evaluates_with_the_next_revision_then_the_window_closes() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    s.push(span(1, 1, None), t0);
    assert_eq!(s.expire(t0 + Duration::from_secs(1))[0].revision, 1);
    let late = t0 + Duration::from_secs(5);
    assert_eq!(s.push(span(1, 2, Some(1)), late), Push::Accepted);
    assert_eq!(s.push(span(1, 3, Some(1)), late), Push::Accepted);
    assert_eq!(s.push(span(1, 2, Some(1)), late), Push::Duplicate);
    let r = s.expire(late + Duration::from_secs(1));
    assert_eq!(r.len(), 1, "one revision for a burst of late spans");
    assert_eq!((r[0].revision, r[0].reason), (2, Reason::Revised));
    assert_eq!(ids(&r[0].spans), BTreeSet::from([1, 2, 3]));
    // After the late window the trace is forgotten; later spans are dropped and counted.
    assert!(s.expire(late + Duration::from_secs(62)).is_empty());
    assert_eq!(s.traces(), 0);
    assert_eq!(
        s.push(span(1, 4, Some(1)), late + Duration::from_secs(63)),
        Push::TooLate
    );
    assert_eq!(s.counts.late_dropped, 1);
    assert_eq!(s.counts.revised, 1);
}

/// A span the shard cannot take for a reason of its own (here a caller's
/// index past the request) is refused as corrupt, not as a late span.
#[test]
fn an_index_past_the_request_is_corrupt_not_late() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    let request = records(&[span(1, 1, None)]);
    assert_eq!(
        s.push_record(&request, 1, Run::default(), t0),
        Push::Corrupt
    );
    assert_eq!((s.traces(), s.counts.late_dropped), (0, 0));
    assert_eq!(
        s.push_record(&request, 0, Run::default(), t0),
        Push::Accepted
    );
}

/// Replay after a restart: a trace whose revision 2 (three spans) was
/// stored comes back as evaluated; its three spans read back from the log
/// make no new revision, a fourth (a late span whose revision the crash cut
/// off) makes revision 3 of all four.
#[test]
fn a_restored_trace_is_re_evaluated_only_for_spans_beyond_its_stored_result() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    s.restore(TraceId([1; 16]), 2, 3, t0);
    assert_eq!(s.open_traces(), 0, "restored as evaluated");
    for id in [2, 1, 3] {
        let parent = (id != 1).then_some(1);
        assert_eq!(s.push(span(1, id, parent), t0), Push::Accepted);
    }
    assert!(
        s.expire(t0 + Duration::from_secs(5)).is_empty(),
        "its stored result's spans make no revision"
    );
    let late = t0 + Duration::from_secs(6);
    assert_eq!(s.push(span(1, 4, Some(1)), late), Push::Accepted);
    let r = s.expire(late + Duration::from_secs(1));
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].revision, r[0].reason), (3, Reason::Revised));
    assert_eq!(ids(&r[0].spans), BTreeSet::from([1, 2, 3, 4]));
    assert!(r[0].complete, "the root came back from the log");
    assert_eq!((s.counts.completed, s.counts.revised), (0, 1));
    // Restored again, or evicted: nothing else changes.
    s.restore(TraceId([1; 16]), 1, 1, late);
    assert!(s.evict_emitted());
    assert!(!s.evict_emitted());
    assert_eq!(s.traces(), 0);
}

#[test]
fn a_rootless_trace_times_out_incomplete_or_is_dropped() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    s.push(span(1, 2, Some(1)), t0);
    // Each new span pushes the idle deadline back.
    s.push(span(1, 3, Some(1)), t0 + Duration::from_secs(200));
    assert!(s.expire(t0 + Duration::from_secs(499)).is_empty());
    let r = s.expire(t0 + Duration::from_secs(500));
    assert_eq!(r.len(), 1);
    assert!(!r[0].complete);
    assert_eq!(r[0].reason, Reason::TimedOut);

    let mut l = limits();
    l.on_timeout = OnTimeout::Drop;
    let mut s = Shard::new(l);
    s.push(span(1, 2, Some(1)), t0);
    assert!(s.expire(t0 + Duration::from_secs(300)).is_empty());
    assert_eq!(s.counts.timed_out_dropped, 1);
    assert_eq!(s.traces(), 0);
}

#[test]
fn the_age_limit_caps_a_trace_that_never_goes_idle() {
    let t0 = Instant::now();
    let mut l = limits();
    l.idle_timeout = Duration::from_secs(10);
    l.max_age = Duration::from_secs(25);
    let mut s = Shard::new(l);
    // A span every 8 s keeps it from ever idling for 10 s.
    for i in 0..4u8 {
        s.push(
            span(1, 10 + i, Some(1)),
            t0 + Duration::from_secs(8 * u64::from(i)),
        );
    }
    assert_eq!(s.next_deadline(), Some(t0 + Duration::from_secs(25)));
    let r = s.expire(t0 + Duration::from_secs(25));
    assert_eq!(
        r.len(),
        1,
        "emitted at the age limit although spans keep coming"
    );
    assert_eq!(r[0].spans.len(), 4);
}

#[test]
fn bounds_refuse_spans_and_free_emitted_traces_first() {
    let t0 = Instant::now();
    let mut l = limits();
    l.max_traces = 2;
    l.max_spans_per_trace = 2;
    let mut s = Shard::new(l);
    assert_eq!(s.push(span(1, 1, None), t0), Push::Accepted);
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(s.push(span(1, 3, Some(1)), t0), Push::TraceFull);
    assert_eq!(s.push(span(2, 1, Some(9)), t0), Push::Accepted);
    assert_eq!(
        s.push(span(3, 1, Some(9)), t0),
        Push::Full,
        "two open traces fill the shard"
    );
    // Once trace 1 is evaluated it is only kept for late spans: it makes room.
    assert_eq!(s.expire(t0 + Duration::from_secs(1)).len(), 1);
    assert_eq!(
        s.push(span(3, 1, Some(9)), t0 + Duration::from_secs(1)),
        Push::Accepted
    );
    assert_eq!(s.counts.evicted_emitted, 1);

    // The byte bound: what two spans of one trace hold.
    let mut s = Shard::new(limits());
    s.push(span(1, 1, None), t0);
    s.push(span(1, 2, Some(1)), t0);
    let mut l = limits();
    l.max_bytes = s.bytes();
    let mut s = Shard::new(l);
    assert_eq!(s.push(span(1, 1, None), t0), Push::Accepted);
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(s.push(span(1, 3, Some(1)), t0), Push::Full);
}

#[test]
fn drain_emits_complete_traces_and_rootless_ones_per_policy() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    s.push(span(1, 1, None), t0);
    s.push(span(2, 2, Some(1)), t0);
    // As shutdown drains a shard.
    let r: Vec<_> = s
        .held_ids()
        .into_iter()
        .filter_map(|id| s.drain_one(id))
        .collect();
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|r| r.reason == Reason::Shutdown));
    assert_eq!(r.iter().filter(|r| r.complete).count(), 1);
    assert_eq!(s.traces(), 0);
    assert_eq!(s.bytes(), 0);
}

/// Shutdown takes one trace at a time: the others stay as received (their bytes
/// still held) until their turn.
#[test]
fn drain_one_unpacks_only_the_trace_it_hands_over() {
    let t0 = Instant::now();
    let mut s = Shard::new(limits());
    for t in 1..=3 {
        s.push(span(t, 1, None), t0);
        s.push(span(t, 2, Some(1)), t0);
    }
    let ids = s.held_ids();
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in trace ID order");
    let before = s.bytes();
    let first = s.drain_one(ids[0]).unwrap();
    assert_eq!((first.trace_id, first.spans.len()), (ids[0], 2));
    assert_eq!(s.traces(), 2);
    assert!(s.bytes() > 0 && s.bytes() < before);
    assert!(s.drain_one(ids[0]).is_none(), "handed over once");
    for id in &ids[1..] {
        assert!(s.drain_one(*id).is_some());
    }
    assert_eq!((s.traces(), s.bytes()), (0, 0));
}

proptest! {
    /// For any interleaving and duplication of several traces' spans, each
    /// trace is emitted once with exactly its spans: nothing lost, nothing twice.
    #[test]
    fn any_interleaving_and_duplication_assembles_the_same_traces(
        sizes in prop::collection::vec(1u8..8, 1..5),
        order in prop::collection::vec(any::<u32>(), 0..200),
        dups in prop::collection::vec(any::<u16>(), 0..40),
    ) {
        let mut spans = Vec::new();
        for (t, n) in sizes.iter().enumerate() {
            let t = t as u8 + 1;
            spans.push(span(t, 1, None));
            for i in 0..*n {
                spans.push(span(t, i + 2, Some(1)));
            }
        }
        // A permutation keyed by the random vector, plus duplicates.
        let mut keyed: Vec<(u32, usize)> = (0..spans.len())
            .map(|i| (order.get(i).copied().unwrap_or(i as u32), i))
            .collect();
        keyed.sort();
        let mut sequence: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
        for d in &dups {
            let i = usize::from(*d) % spans.len();
            sequence.insert(usize::from(*d) % (sequence.len() + 1), i);
        }
        let t0 = Instant::now();
        let mut s = Shard::new(limits());
        for (step, i) in sequence.iter().enumerate() {
            let r = s.push(spans[*i].clone(), t0 + Duration::from_micros(step as u64));
            prop_assert!(matches!(r, Push::Accepted | Push::Duplicate));
        }
        let ready = s.expire(t0 + Duration::from_secs(2));
        prop_assert_eq!(ready.len(), sizes.len());
        for r in &ready {
            let t = r.trace_id.0[0];
            let n = sizes[usize::from(t) - 1];
            let want: BTreeSet<u8> = (1..=n + 1).collect();
            prop_assert_eq!(ids(&r.spans), want);
            prop_assert_eq!(r.spans.len(), usize::from(n) + 1, "no span stored twice");
            prop_assert!(r.complete);
        }
    }
}

#[test]
fn spans_known_to_follow_size_a_trace_once_and_change_nothing_else() {
    let t0 = Instant::now();
    let batch: Vec<Span> = vec![
        span(1, 2, Some(1)),
        span(1, 3, Some(1)),
        span(2, 9, None),
        span(1, 4, Some(1)),
        span(1, 5, Some(1)),
        span(1, 1, None),
    ];
    let following = runs(&batch);
    assert_eq!(following, [1, 0, 0, 2, 1, 0]);
    let mut s = Shard::new(limits());
    for (sp, f) in batch.iter().cloned().zip(following) {
        assert_eq!(s.push_sized(sp, 0, f, t0), Push::Accepted);
    }
    // Sized for the run of two, then for the run of three: no slack but
    // the root's missing parent ID (8 bytes; spans are sized as the first).
    let held = s.held(&TraceId([1; 16])).expect("trace 1 is buffered");
    assert_eq!(held.spare(), 8);
    // As the driver pushes them, with the bytes of the records that follow:
    // sized exactly.
    let request = records(&batch);
    let idx: Vec<usize> = (0..batch.len()).collect();
    let mut exact = Shard::new(limits());
    for (i, run) in super::driver::runs(&request, &idx).into_iter().enumerate() {
        assert_eq!(exact.push_record(&request, i, run, t0), Push::Accepted);
    }
    let held = exact.held(&TraceId([1; 16])).expect("trace 1 is buffered");
    assert_eq!(held.spare(), 0);
    let ready = s.expire(t0 + Duration::from_millis(1000));
    let one = ready
        .iter()
        .find(|r| r.trace_id == TraceId([1; 16]))
        .expect("trace 1 is complete");
    assert_eq!(ids(&one.spans), BTreeSet::from([1, 2, 3, 4, 5]));
    assert!(runs(&[]).is_empty());

    // Room made for spans then refused (here duplicates) is given back at
    // the end of the run, as the driver does; and never beyond the limit.
    let mut s = Shard::new(limits());
    let batch: Vec<Span> = (0..40)
        .map(|i| span(3, if i < 2 { 2 + i } else { 9 }, Some(1)))
        .chain(std::iter::once(span(3, 1, None)))
        .collect();
    let following = runs(&batch);
    assert_eq!(following[0], 40);
    let mut sizes = Vec::new();
    for (sp, f) in batch.into_iter().zip(following) {
        let id = sp.trace_id;
        sizes.push(records(std::slice::from_ref(&sp)).record_size(0) + size_of::<SpanId>());
        s.push_sized(sp, 0, 1000, t0);
        if f == 0 {
            s.end_run(&id);
        }
    }
    let held = s.held(&TraceId([3; 16])).expect("trace 3 is buffered");
    assert_eq!(held.span_count(), 4);
    let used: usize = sizes[..2].iter().chain([&sizes[2], &sizes[40]]).sum();
    assert!(held.spare() <= used / 4 + 16, "{} spare", held.spare());
    let ready = s.expire(t0 + Duration::from_millis(1000));
    assert_eq!(ids(&ready[0].spans), BTreeSet::from([1, 2, 3, 9]));
}

/// A buffer full of rootless traces nobody finishes must not refuse every
/// fresh span until the idle timeout: traces idle for the grace period are
/// timed out early to make room, oldest deadline first; traces still in
/// use, and complete ones, are not. A trace timed out early counts in the
/// bounds until evaluation takes it: the span that needed its room is
/// refused (retryable) until then.
#[test]
fn idle_rootless_traces_make_room_instead_of_refusing_fresh_spans() {
    let t0 = Instant::now();
    let grace = Duration::from_millis(1000);
    let mut s = Shard::new(Limits {
        max_traces: 3,
        ..limits()
    });
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(
        s.push(span(2, 2, Some(1)), t0 + Duration::from_millis(10)),
        Push::Accepted
    );
    assert_eq!(
        s.push(span(3, 1, None), t0 + Duration::from_millis(20)),
        Push::Accepted
    );
    // Within the grace period nothing is idle: refused, as before.
    let busy = t0 + Duration::from_millis(500);
    assert_eq!(s.push(span(4, 2, Some(1)), busy), Push::Full);
    assert_eq!(s.leaving(), 0);

    // Idle now: the oldest rootless trace is timed out, due at once, and
    // still held until evaluation takes it; the span waits for its room.
    let later = t0 + grace + Duration::from_millis(5);
    assert_eq!(s.push(span(4, 2, Some(1)), later), Push::Full);
    assert_eq!((s.leaving(), s.traces()), (1, 3));
    assert_eq!(
        s.rooted(),
        (2, 2),
        "the leaving trace counts in the backlog"
    );
    // Asking again times out nothing more: its room is on the way.
    assert_eq!(s.push(span(4, 2, Some(1)), later), Push::Full);
    assert_eq!(s.leaving(), 1);
    assert_eq!(s.next_deadline(), Some(later));
    let left = s.take_leaving(later).unwrap();
    assert_eq!(left.trace_id, TraceId([1; 16]));
    assert_eq!(left.reason, Reason::TimedOut);
    assert!(!left.complete);
    assert_eq!(ids(&left.spans), BTreeSet::from([2]));
    assert_eq!((s.counts.evicted_idle, s.counts.timed_out), (1, 1));
    assert_eq!((s.leaving(), s.traces()), (0, 2));
    assert_eq!(s.rooted(), (1, 1));
    assert_eq!(s.push(span(4, 2, Some(1)), later), Push::Accepted);
    // Its later spans are too late; the complete trace (3) was never a candidate.
    assert_eq!(s.push(span(1, 1, None), later), Push::TooLate);
    // Trace 2 has been idle for the grace period a little later; left to
    // its deadline (now), it leaves through `expire` like any due trace.
    let later2 = t0 + Duration::from_millis(1015);
    assert_eq!(s.push(span(5, 2, Some(1)), later2), Push::Full);
    let due = s.expire(later2);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].trace_id, TraceId([2; 16]));
    assert_eq!(s.push(span(5, 2, Some(1)), later2), Push::Accepted);
    assert!(s.contains(&TraceId([3; 16])));

    // on_timeout: drop drops them at once instead, counted.
    let mut s = Shard::new(Limits {
        max_traces: 1,
        on_timeout: OnTimeout::Drop,
        ..limits()
    });
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(s.push(span(2, 2, Some(1)), later), Push::Accepted);
    assert_eq!(s.leaving(), 0);
    assert_eq!((s.counts.evicted_idle, s.counts.timed_out_dropped), (1, 1));
}

/// A leaving trace takes spans until it leaves, and its root makes it
/// complete rather than timed out; shutdown drains it like any open trace.
#[test]
fn a_leaving_trace_keeps_its_spans_and_its_root() {
    let t0 = Instant::now();
    let later = t0 + Duration::from_secs(2);
    let mut s = Shard::new(Limits {
        max_traces: 1,
        ..limits()
    });
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(s.push(span(2, 2, Some(1)), later), Push::Full);
    let held = s.bytes();
    assert_eq!(s.push(span(1, 3, Some(1)), later), Push::Accepted);
    assert!(s.bytes() > held);
    assert_eq!(s.push(span(1, 1, None), later), Push::Accepted);
    assert_eq!(s.rooted(), (3, 1));
    let left = s.take_leaving(later).unwrap();
    assert!(left.complete);
    assert_eq!(left.reason, Reason::Complete);
    assert_eq!(ids(&left.spans), BTreeSet::from([1, 2, 3]));
    assert_eq!((s.counts.completed, s.counts.evicted_idle), (1, 0));
    assert_eq!((s.bytes(), s.rooted(), s.leaving()), (0, (0, 0), 0));

    let mut s = Shard::new(Limits {
        max_traces: 1,
        ..limits()
    });
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(s.push(span(2, 2, Some(1)), later), Push::Full);
    let drained: Vec<_> = s
        .held_ids()
        .into_iter()
        .filter_map(|id| s.drain_one(id))
        .collect();
    assert_eq!(drained.len(), 1);
    assert_eq!((s.bytes(), s.rooted(), s.leaving()), (0, (0, 0), 0));
}

/// The byte bound makes room the same way.
#[test]
fn idle_rootless_traces_make_room_under_the_byte_bound() {
    let t0 = Instant::now();
    let mut probe = Shard::new(limits());
    probe.push(span(1, 2, Some(1)), t0);
    let one = probe.bytes();
    let mut s = Shard::new(Limits {
        max_bytes: one * 2,
        ..limits()
    });
    assert_eq!(s.push(span(1, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(s.push(span(2, 2, Some(1)), t0), Push::Accepted);
    assert_eq!(s.push(span(3, 2, Some(1)), t0), Push::Full);
    let later = t0 + Duration::from_secs(2);
    assert_eq!(s.push(span(3, 2, Some(1)), later), Push::Full);
    assert!(s.bytes() <= one * 2);
    assert!(s.take_leaving(later).is_some());
    assert_eq!(s.push(span(3, 2, Some(1)), later), Push::Accepted);
    assert!(s.bytes() <= one * 2);
}

/// A service at its quota of open traces has its new traces refused
/// (retryable), while other services' are taken and its existing traces
/// grow; its quota frees as its traces are evaluated.
#[test]
fn a_service_at_its_quota_is_refused_new_traces_and_others_are_not() {
    let t0 = Instant::now();
    let mut s = Shard::new(Limits {
        max_traces_per_service: 2,
        ..limits()
    });
    let of = |trace: u8, id: u8, parent: Option<u8>, service: &str| Span {
        service_name: Some(std::sync::Arc::from(service)),
        scope_name: None,
        ..span(trace, id, parent)
    };
    assert_eq!(s.push(of(1, 1, None, "noisy"), t0), Push::Accepted);
    assert_eq!(s.push(of(2, 1, None, "noisy"), t0), Push::Accepted);
    assert_eq!(s.push(of(3, 1, None, "noisy"), t0), Push::ServiceFull);
    assert_eq!(
        s.push(of(1, 2, Some(1), "noisy"), t0),
        Push::Accepted,
        "its traces grow"
    );
    assert_eq!(s.push(of(4, 1, None, "quiet"), t0), Push::Accepted);
    assert_eq!(
        s.push(span(5, 1, None), t0),
        Push::Accepted,
        "no service: no quota"
    );
    // Evaluated, trace 1 no longer counts.
    assert_eq!(s.expire(t0 + Duration::from_secs(1)).len(), 4);
    assert_eq!(
        s.push(of(3, 1, None, "noisy"), t0 + Duration::from_secs(1)),
        Push::Accepted
    );
}
