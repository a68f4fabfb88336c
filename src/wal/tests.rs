//! The log through its public API, on real files in temporary directories.

use std::num::NonZero;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::format::{self, HEADER_LEN};
use super::*;

fn config(dir: &Path) -> WalConfig {
    WalConfig {
        enabled: true,
        dir: dir.to_path_buf(),
        max_bytes: NonZero::new(1 << 20).unwrap(),
        segment_bytes: NonZero::new(64 << 10).unwrap(),
        sync: WalSync::None,
        sync_interval_ms: NonZero::new(5).unwrap(),
    }
}

fn open(config: &WalConfig) -> (Wal, Replay) {
    Wal::open(config, Arc::new(Metrics::new())).unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Appends and waits until durable; returns the segment.
fn put(wal: &Wal, payload: &[u8]) -> u64 {
    let a = wal.append(Kind::OtlpProtobuf, 7, payload).unwrap();
    let segment = a.segment;
    block_on(a.durable()).unwrap();
    segment
}

fn all_records(replay: &mut Replay) -> Vec<Record> {
    let mut out = Vec::new();
    while let Some(segment) = replay.next_segment() {
        out.extend(segment.unwrap());
    }
    out
}

fn payloads_of(records: &[Record]) -> Vec<Vec<u8>> {
    records.iter().map(|r| r.payload.clone()).collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn segment_file(dir: &Path, segment: u64) -> std::path::PathBuf {
    segment_path(dir, segment)
}

#[test]
fn records_come_back_after_reopening_and_new_appends_go_to_a_later_segment() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let (wal, mut replay) = open(&cfg);
    assert!(replay.next_segment().is_none());
    let kinds = [Kind::OtlpProtobuf, Kind::OtlpJson, Kind::OtlpProtobuf];
    for (i, kind) in kinds.into_iter().enumerate() {
        let a = wal
            .append(kind, 100 + i as u64, format!("request {i}").as_bytes())
            .unwrap();
        assert_eq!(a.segment, 1);
        block_on(a.durable()).unwrap();
    }
    wal.close();
    assert!(matches!(
        wal.append(Kind::OtlpJson, 0, b"late"),
        Err(WalError::Closed)
    ));
    wal.close();
    drop(wal);

    let (wal, mut replay) = open(&cfg);
    let records = all_records(&mut replay);
    let want: Vec<Record> = kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Record {
            segment: 1,
            kind,
            arrived_unix_nanos: 100 + i as u64,
            payload: format!("request {i}").into_bytes(),
        })
        .collect();
    assert_eq!(records, want);
    assert_eq!(replay.quarantined_bytes(), 0);
    assert_eq!(put(&wal, b"after"), 2);
    assert_eq!(wal.segments(), 2);
}

#[test]
fn small_segments_rotate_and_records_keep_their_segment_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.segment_bytes = NonZero::new(200).unwrap();
    let (wal, _) = open(&cfg);
    let mut appended = Vec::new();
    for i in 0..20u8 {
        let payload = vec![i; usize::from(i) * 7];
        let a = wal.append(Kind::OtlpJson, u64::from(i), &payload).unwrap();
        appended.push((a.segment, payload));
        block_on(a.durable()).unwrap();
    }
    // A record larger than a segment goes alone into one.
    let big = vec![0xAB; 500];
    let a = wal.append(Kind::OtlpJson, 99, &big).unwrap();
    appended.push((a.segment, big));
    block_on(a.durable()).unwrap();
    wal.close();

    let segments: Vec<u64> = appended.iter().map(|(s, _)| *s).collect();
    assert!(segments.windows(2).all(|w| w[0] <= w[1]), "{segments:?}");
    assert!(segments.last() > Some(&3), "{segments:?}");
    for s in 1..*segments.last().unwrap() {
        let len = std::fs::metadata(segment_file(dir.path(), s))
            .unwrap()
            .len();
        assert!(len <= 200 || segments.iter().filter(|x| **x == s).count() == 1);
    }

    let (_wal, mut replay) = open(&cfg);
    let records = all_records(&mut replay);
    let got: Vec<(u64, Vec<u8>)> = records
        .into_iter()
        .map(|r| (r.segment, r.payload))
        .collect();
    assert_eq!(got, appended);
}

#[test]
fn a_full_log_refuses_until_unpinned_segments_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.max_bytes = NonZero::new(1000).unwrap();
    cfg.segment_bytes = NonZero::new(200).unwrap();
    let (wal, _) = open(&cfg);
    let mut pin = wal.pin();
    let mut refused = None;
    for _ in 0..100 {
        match wal.append(Kind::OtlpProtobuf, 0, &[1; 50]) {
            Ok(mut a) => {
                pin.merge(a.take_pin());
                block_on(a.durable()).unwrap();
            }
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    assert!(
        matches!(refused, Some(WalError::Full { max_bytes: 1000 })),
        "{refused:?}"
    );
    assert!(wal.bytes() <= 1000);
    let before = wal.segments();
    assert!(before > 1);

    // Unpinned, but deletion waits for replay to be done.
    drop(pin);
    assert!(matches!(
        wal.append(Kind::OtlpProtobuf, 0, &[1; 50]),
        Err(WalError::Full { .. })
    ));
    assert_eq!(wal.segments(), before);

    wal.replay_done();
    wait_until("all but the head are deleted", || wal.segments() == 1);
    put(&wal, &[2; 50]);
    assert!(wal.bytes() < 400);
}

#[test]
fn a_record_that_could_never_fit_is_too_large_not_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.max_bytes = NonZero::new(100).unwrap();
    cfg.segment_bytes = NonZero::new(100).unwrap();
    let (wal, _) = open(&cfg);
    assert!(matches!(
        wal.append(Kind::OtlpJson, 0, &[0; 100]),
        Err(WalError::TooLarge { bytes: 100 })
    ));
    put(&wal, &[0; 50]);
}

// Deletion runs on the writer thread. A test proves a held segment
// survived a deletion pass by waiting for an unheld one to go in that pass.
#[test]
fn held_segments_survive_and_go_with_their_last_pin_but_the_head_stays() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.segment_bytes = NonZero::new(100).unwrap();
    let (wal, _) = open(&cfg);
    let exists = |s| segment_file(dir.path(), s).exists();
    let mut first = wal.pin();
    let mut second = Pin::default();
    assert!(first.is_empty());
    assert_eq!(put(&wal, &[0; 60]), 1);
    first.hold(&wal, 1);
    first.hold(&wal, 1);
    second.hold(&wal, 1);
    assert!(!first.is_empty());
    assert_eq!(put(&wal, &[0; 60]), 2);
    assert_eq!(put(&wal, &[0; 60]), 3);
    assert_eq!(wal.segments(), 3);

    wal.replay_done();
    wait_until("segment 2 is deleted", || !exists(2));
    assert!(exists(1));
    assert!(exists(3));

    drop(first);
    assert_eq!(put(&wal, &[0; 60]), 4);
    wait_until("segment 3 is deleted", || !exists(3));
    assert!(exists(1), "still held by the second pin");
    assert_eq!(wal.segments(), 2);

    let mut merged = wal.pin();
    merged.merge(second);
    drop(merged);
    wait_until("segment 1 is deleted", || !exists(1));
    assert_eq!(wal.segments(), 1);
    assert!(exists(4), "the head is never deleted");
}

#[test]
fn a_shared_pin_keeps_its_segments_until_both_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.segment_bytes = NonZero::new(100).unwrap();
    cfg.max_bytes = NonZero::new(400).unwrap();
    let (wal, _) = open(&cfg);
    let exists = |s| segment_file(dir.path(), s).exists();
    put(&wal, &[0; 60]);
    let mut buffer = wal.pin();
    buffer.hold(&wal, 1);
    let result = buffer.share();
    assert!(Pin::default().share().is_empty());
    put(&wal, &[0; 60]);
    put(&wal, &[0; 60]);
    assert!(wal.under_pressure(), "{} of 400 bytes", wal.bytes());
    wal.replay_done();
    wait_until("segment 2 is deleted", || !exists(2));
    drop(result);
    put(&wal, &[0; 60]);
    wait_until("segment 3 is deleted", || !exists(3));
    assert!(exists(1), "still held by the buffer's pin");
    drop(buffer);
    wait_until("segment 1 is deleted", || !exists(1));
    assert!(!wal.under_pressure(), "{} of 400 bytes", wal.bytes());
}

#[test]
fn merging_a_duplicate_hold_releases_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.segment_bytes = NonZero::new(100).unwrap();
    let (wal, _) = open(&cfg);
    let exists = |s| segment_file(dir.path(), s).exists();
    put(&wal, &[0; 60]);
    let mut a = wal.pin();
    a.hold(&wal, 1);
    let mut b = wal.pin();
    b.hold(&wal, 1);
    a.merge(b);
    put(&wal, &[0; 60]);
    put(&wal, &[0; 60]);
    wal.replay_done();
    wait_until("segment 2 is deleted", || !exists(2));
    assert!(exists(1));
    drop(a);
    wait_until("segment 1 is deleted", || !exists(1));
}

#[test]
fn an_appended_record_holds_its_segment_until_the_caller_pins_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.segment_bytes = NonZero::new(100).unwrap();
    let (wal, _) = open(&cfg);
    wal.replay_done();
    let mut a = wal.append(Kind::OtlpJson, 0, &[0; 60]).unwrap();
    let pin = a.take_pin();
    block_on(a.durable()).unwrap();
    let b = wal.append(Kind::OtlpJson, 0, &[0; 60]).unwrap();
    assert_eq!((pin.segments.as_slice(), b.segment), (&[1][..], 2));
    block_on(b.durable()).unwrap();
    put(&wal, &[0; 60]);
    wait_until("segment 2 is deleted", || {
        !segment_file(dir.path(), 2).exists()
    });
    assert!(segment_file(dir.path(), 1).exists());
    drop(pin);
    wait_until("segment 1 is deleted", || wal.segments() == 1);
}

#[test]
fn a_failed_write_refuses_its_appends_and_the_next_ones_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let metrics = Arc::new(Metrics::new());
    let (wal, _) = Wal::open(&cfg, Arc::clone(&metrics)).unwrap();
    // A directory where the segment's file should go: creating it fails.
    std::fs::create_dir(segment_file(dir.path(), 1)).unwrap();
    let a = wal.append(Kind::OtlpJson, 0, b"refused").unwrap();
    assert!(matches!(block_on(a.durable()), Err(WalError::Io { .. })));
    assert_eq!(metrics.wal_write_errors.get(), 1);
    assert_eq!(wal.bytes(), 0);

    std::fs::remove_dir(segment_file(dir.path(), 1)).unwrap();
    assert_eq!(put(&wal, b"kept"), 1);
    wal.close();
    let (_wal, mut replay) = open(&cfg);
    assert_eq!(
        payloads_of(&all_records(&mut replay)),
        vec![b"kept".to_vec()]
    );
}

#[test]
fn replayed_segments_are_kept_until_replay_is_done_and_unpinned() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.segment_bytes = NonZero::new(100).unwrap();
    let (wal, _) = open(&cfg);
    put(&wal, &[0; 60]);
    put(&wal, &[0; 60]);
    drop(wal);

    let (wal, mut replay) = open(&cfg);
    let mut pin = wal.pin();
    let first = replay.next_segment().unwrap().unwrap();
    pin.hold(&wal, first[0].segment);
    let second = replay.next_segment().unwrap().unwrap();
    assert_eq!((first[0].segment, second[0].segment), (1, 2));
    assert_eq!(put(&wal, b"new"), 3);
    assert_eq!(wal.segments(), 3);
    wal.replay_done();
    wait_until("the unpinned replayed segment is deleted", || {
        wal.segments() == 2
    });
    assert!(segment_file(dir.path(), 1).exists());
    drop(pin);
    wait_until("the pinned one too", || wal.segments() == 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.sync = WalSync::Always;
    let (wal, _) = open(&cfg);
    let start = Arc::new(tokio::sync::Barrier::new(100));
    let mut tasks = Vec::new();
    for i in 0..100u32 {
        let (wal, start) = (wal.clone(), Arc::clone(&start));
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            wal.append(Kind::OtlpProtobuf, 0, &i.to_le_bytes())
                .unwrap()
                .durable()
                .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert!(wal.fsyncs() < 100, "{} fsyncs", wal.fsyncs());
    assert!(wal.fsyncs() >= 1);
    tokio::task::spawn_blocking(move || wal.close())
        .await
        .unwrap();
    let (_wal, mut replay) = open(&cfg);
    let mut got: Vec<u32> = all_records(&mut replay)
        .iter()
        .map(|r| u32::from_le_bytes(r.payload.as_slice().try_into().unwrap()))
        .collect();
    got.sort_unstable();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn interval_sync_completes_appends() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.sync = WalSync::Interval;
    cfg.sync_interval_ms = NonZero::new(20).unwrap();
    let (wal, _) = open(&cfg);
    let pending: Vec<Appended> = (0..10u8)
        .map(|i| wal.append(Kind::OtlpJson, 0, &[i]).unwrap())
        .collect();
    block_on(async {
        for a in pending {
            a.durable().await.unwrap();
        }
    });
    put(&wal, b"one more");
    assert!(wal.fsyncs() >= 1);
}

#[test]
fn dropping_the_last_handle_flushes_and_stops_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let (wal, _) = open(&cfg);
    let a = wal.append(Kind::OtlpJson, 0, b"x").unwrap();
    let other = wal.clone();
    drop(wal);
    assert!(other.append(Kind::OtlpJson, 0, b"y").is_ok());
    drop(other);
    block_on(a.durable()).unwrap();
    let (_wal, mut replay) = open(&cfg);
    assert_eq!(
        payloads_of(&all_records(&mut replay)),
        vec![b"x".to_vec(), b"y".to_vec()]
    );
}

#[test]
fn a_second_process_on_the_same_directory_is_refused_until_the_first_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _replay) = open(&config(dir.path()));
    let second = Wal::open(&config(dir.path()), Arc::new(Metrics::new()));
    assert!(
        matches!(second, Err(WalError::InUse { .. })),
        "{:?}",
        second.err()
    );
    drop(first);
    let (again, _) = open(&config(dir.path()));
    again.close();
}

#[test]
fn foreign_and_newer_files_refuse_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let path = segment_file(dir.path(), 4);
    std::fs::write(&path, b"SQLite format 3\0 and more").unwrap();
    assert!(matches!(
        Wal::open(&cfg, Arc::new(Metrics::new())),
        Err(WalError::Foreign { .. })
    ));

    let mut newer = format::encode_header();
    newer[8..12].copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(&path, newer).unwrap();
    match Wal::open(&cfg, Arc::new(Metrics::new())) {
        Err(WalError::NewerFormat {
            found: 2, known: 1, ..
        }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn a_segment_cut_short_in_its_header_is_removed_and_numbering_goes_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    std::fs::write(segment_file(dir.path(), 5), &format::MAGIC[..3]).unwrap();
    let (wal, mut replay) = open(&cfg);
    assert!(replay.next_segment().is_none());
    assert!(!segment_file(dir.path(), 5).exists());
    assert_eq!(put(&wal, b"x"), 6);
}

/// Writes `payloads` through a real log into segment 1 of a new directory;
/// returns the directory and each record's offset in the segment.
fn written(payloads: &[Vec<u8>]) -> (tempfile::TempDir, Vec<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(&config(dir.path()));
    let mut offsets = Vec::new();
    let mut at = HEADER_LEN;
    for p in payloads {
        offsets.push(at);
        at += format::record_len(p.len());
        assert_eq!(put(&wal, p), 1);
    }
    wal.close();
    (dir, offsets)
}

/// Replays a directory holding only `segment` (segment 1's bytes); returns
/// the records, the quarantine file's bytes and the segment's bytes after.
fn replay_alone(segment: &[u8]) -> (Vec<Record>, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = segment_file(dir.path(), 1);
    std::fs::write(&path, segment).unwrap();
    let (_wal, mut replay) = open(&config(dir.path()));
    let records = all_records(&mut replay);
    let aside = std::fs::read(path.with_file_name("00000000000000000001.wal.quarantine"))
        .unwrap_or_default();
    assert_eq!(replay.quarantined_bytes(), aside.len() as u64);
    (records, aside, std::fs::read(&path).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn a_torn_last_record_is_set_aside_and_the_rest_replays(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..6),
    ) {
        let (dir, offsets) = written(&payloads);
        let full = std::fs::read(segment_file(dir.path(), 1)).unwrap();
        let last = *offsets.last().unwrap();
        let good = &payloads[..payloads.len() - 1];
        for cut in last..full.len() {
            let (records, aside, after) = replay_alone(&full[..cut]);
            prop_assert_eq!(payloads_of(&records), good.to_vec());
            prop_assert!(records.iter().all(|r| r.segment == 1));
            prop_assert_eq!(&aside[..], &full[last..cut]);
            prop_assert_eq!(&after[..], &full[..last]);
        }
    }

    #[test]
    fn a_flipped_byte_sets_aside_its_record_and_all_after(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 3..6),
        pick in any::<prop::sample::Index>(),
    ) {
        let (dir, offsets) = written(&payloads);
        let mut bytes = std::fs::read(segment_file(dir.path(), 1)).unwrap();
        let middle = payloads.len() / 2;
        let start = offsets[middle];
        let i = start + pick.index(format::record_len(payloads[middle].len()));
        bytes[i] ^= 0x5A;
        let (records, aside, after) = replay_alone(&bytes);
        prop_assert_eq!(payloads_of(&records), payloads[..middle].to_vec());
        prop_assert_eq!(&aside[..], &bytes[start..]);
        prop_assert_eq!(&after[..], &bytes[..start]);
    }
}

#[test]
fn quarantine_appends_and_later_segments_still_replay() {
    let (dir, offsets) = written(&[b"a".to_vec(), b"bb".to_vec()]);
    let full = std::fs::read(segment_file(dir.path(), 1)).unwrap();
    let path = segment_file(dir.path(), 1);
    let aside = path.with_file_name("00000000000000000001.wal.quarantine");
    std::fs::write(&aside, b"earlier|").unwrap();
    std::fs::write(&path, &full[..full.len() - 1]).unwrap();
    // A later segment, whole.
    let later = written(&[b"c".to_vec()]).0;
    std::fs::copy(segment_file(later.path(), 1), segment_file(dir.path(), 2)).unwrap();

    let (wal, mut replay) = open(&config(dir.path()));
    let records = all_records(&mut replay);
    assert_eq!(payloads_of(&records), vec![b"a".to_vec(), b"c".to_vec()]);
    assert_eq!(records[1].segment, 2);
    let mut want = b"earlier|".to_vec();
    want.extend_from_slice(&full[offsets[1]..full.len() - 1]);
    assert_eq!(std::fs::read(&aside).unwrap(), want);
    assert_eq!(
        wal.bytes(),
        (offsets[1] + HEADER_LEN + format::record_len(1)) as u64
    );
}
