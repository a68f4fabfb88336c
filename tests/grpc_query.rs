//! The gRPC query API (`toolscore.v1.ScoresService`) end to end: a real
//! tonic server on an ephemeral port over a `MemoryStore`, the generated
//! client, and the reflection client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Streaming};
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

use toolscore::api::grpc::pb;
use toolscore::api::grpc::pb::scores_service_client::ScoresServiceClient;
use toolscore::api::grpc::router_services;
use toolscore::criteria::Binding;
use toolscore::evaluator::{EvaluatorType, Outcome};
use toolscore::span::{SpanId, TraceId};
use toolscore::store::{MemoryStore, ResultStore, RootSummary, Score, StoredResult, TraceStatus};

const WAIT: Duration = Duration::from_secs(10);

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f).await.expect("timed out")
}

struct Harness {
    store: Arc<MemoryStore>,
    dropped: Arc<AtomicU64>,
    addr: SocketAddr,
}

impl Harness {
    /// `store_buffer`: the store's broadcast buffer; `watch_buffer`: each watcher's.
    async fn start(store_buffer: usize, watch_buffer: usize) -> Harness {
        let store = Arc::new(MemoryStore::new(64, Duration::from_secs(600), store_buffer));
        let (scores, reflection, dropped) = router_services(store.clone(), watch_buffer).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            Server::builder()
                .add_service(scores)
                .add_service(reflection)
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        Harness {
            store,
            dropped,
            addr,
        }
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::from_shared(format!("http://{}", self.addr)).unwrap()
    }

    async fn client(&self) -> ScoresServiceClient<Channel> {
        ScoresServiceClient::new(within(self.endpoint().connect()).await.unwrap())
    }

    fn put(&self, record: StoredResult) {
        self.store.put(record, Instant::now());
    }
}

fn tid(n: u8) -> TraceId {
    TraceId([n; 16])
}

fn score(evaluator: &str, value: f64) -> Score {
    Score {
        evaluator_id: evaluator.into(),
        evaluator_type: EvaluatorType::Count,
        outcome: Outcome::ok(value, json!({"expected": 1, "actual": 1})).into(),
    }
}

fn record(n: u8, status: TraceStatus, revision: u32, scores: Vec<Score>) -> StoredResult {
    let mut r = StoredResult::pending(tid(n));
    r.status = status;
    r.revision = revision;
    r.complete = status == TraceStatus::Evaluated;
    r.evaluated_at = Some(SystemTime::now());
    r.scores = scores;
    r
}

async fn next(stream: &mut Streaming<pb::TraceScores>) -> pb::TraceScores {
    within(stream.message())
        .await
        .unwrap()
        .expect("stream ended")
}

#[tokio::test]
async fn get_scores_maps_every_field() {
    let h = Harness::start(16, 16).await;
    let root_span = SpanId::from_bytes(&[0xab; 8]).unwrap();
    let evaluated_at = UNIX_EPOCH + Duration::new(1_763_800_000, 123_456_789);
    let call = |name: &str| {
        toolscore::store::StoredCall::shown(
            name,
            None,
            &json!({"city": "Paris"}),
            "sunny",
            SpanId::from_bytes(&[7; 8]).unwrap(),
            (5, 6),
        )
    };
    let mut strict = Outcome::ok(0.0, json!({"reason": "no", "success": false}));
    strict.score_is_int = true;
    strict.passed = Some(false);
    strict.threshold = Some(0.5);
    h.put(StoredResult {
        trace_id: tid(1),
        status: TraceStatus::Evaluated,
        complete: true,
        revision: 3,
        evaluated_at: Some(evaluated_at),
        root: Some(RootSummary {
            span_id: root_span,
            name: "agent run".into(),
            service: Some("weather-agent".into()),
            start_time_unix_nano: 1_000,
            end_time_unix_nano: 2_000,
        }),
        binding: Some(Binding::EvalSet {
            eval_set: "weather".into(),
            item: "case-1".into(),
        }),
        tool_calls: vec![call("get_weather"), call("get_time")].into(),
        content_captured: false,
        scores: vec![
            score("count", 0.6666666666666666),
            Score {
                evaluator_id: "correctness".into(),
                evaluator_type: EvaluatorType::ToolCorrectness,
                outcome: strict.into(),
            },
            Score {
                evaluator_id: "args".into(),
                evaluator_type: EvaluatorType::Args,
                outcome: Outcome::error("criteria missing").into(),
            },
        ],
        span_count: 9,
        judged: None,
    });

    let mut client = h.client().await;
    let req = pb::GetScoresRequest {
        trace_id: tid(1).to_hex().to_uppercase(),
    };
    let got = within(client.get_scores(req)).await.unwrap().into_inner();
    let want = pb::TraceScores {
        trace_id: tid(1).to_hex(),
        status: pb::TraceStatus::Evaluated as i32,
        complete: true,
        revision: 3,
        evaluated_at: Some(prost_types::Timestamp {
            seconds: 1_763_800_000,
            nanos: 123_456_789,
        }),
        root: Some(pb::RootSpan {
            name: "agent run".into(),
            service: Some("weather-agent".into()),
            start_time_unix_nano: 1_000,
            end_time_unix_nano: 2_000,
            span_id: "abababababababab".into(),
        }),
        binding: Some(pb::Binding {
            source: "eval_set".into(),
            eval_set: Some("weather".into()),
            item: Some("case-1".into()),
            rule: None,
        }),
        tool_calls: 2,
        content_captured: false,
        scores: vec![
            pb::Score {
                evaluator_id: "count".into(),
                evaluator_type: "uipath-tool-call-count".into(),
                status: pb::ScoreStatus::Ok as i32,
                score: Some(0.6666666666666666),
                score_is_int: false,
                passed: None,
                threshold: None,
                details_json: r#"{"expected":1,"actual":1}"#.into(),
                error: None,
            },
            pb::Score {
                evaluator_id: "correctness".into(),
                evaluator_type: "deepeval-tool-correctness".into(),
                status: pb::ScoreStatus::Ok as i32,
                score: Some(0.0),
                score_is_int: true,
                passed: Some(false),
                threshold: Some(0.5),
                details_json: r#"{"reason":"no","success":false}"#.into(),
                error: None,
            },
            pb::Score {
                evaluator_id: "args".into(),
                evaluator_type: "uipath-tool-call-args".into(),
                status: pb::ScoreStatus::Error as i32,
                score: None,
                score_is_int: false,
                passed: None,
                threshold: None,
                details_json: "null".into(),
                error: Some("criteria missing".into()),
            },
        ],
    };
    assert_eq!(got, want);

    // A pending trace: no evaluation time, root or binding yet.
    h.store.mark_pending(tid(2), Instant::now());
    let req = pb::GetScoresRequest {
        trace_id: tid(2).to_hex(),
    };
    let got = within(client.get_scores(req)).await.unwrap().into_inner();
    assert_eq!(got.status(), pb::TraceStatus::Pending);
    assert_eq!(
        (got.revision, got.evaluated_at, got.root, got.binding),
        (0, None, None, None)
    );
}

#[tokio::test]
async fn get_scores_refuses_bad_and_unknown_ids() {
    let h = Harness::start(16, 16).await;
    let mut client = h.client().await;
    let get = |id: &str| pb::GetScoresRequest {
        trace_id: id.into(),
    };

    let unknown = within(client.get_scores(get(&tid(9).to_hex())))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert!(unknown.message().contains(&tid(9).to_hex()), "{unknown:?}");

    for bad in [
        "xyz",
        "",
        "00000000000000000000000000000000",
        &"a".repeat(33),
    ] {
        let status = within(client.get_scores(get(bad))).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}: {status:?}");
    }
}

#[tokio::test]
async fn list_traces_filters_newest_first() {
    let h = Harness::start(16, 16).await;
    let before = SystemTime::now();
    h.put(record(
        1,
        TraceStatus::Evaluated,
        1,
        vec![score("count", 1.0)],
    ));
    h.put(record(
        2,
        TraceStatus::TimedOut,
        1,
        vec![score("order", 0.5)],
    ));
    let middle = SystemTime::now();
    h.put(record(3, TraceStatus::Unbound, 1, vec![]));
    h.store.mark_pending(tid(4), Instant::now());

    let mut client = h.client().await;
    let mut list = async |req: pb::ListTracesRequest| -> Vec<String> {
        let resp = within(client.list_traces(req)).await.unwrap().into_inner();
        resp.traces.into_iter().map(|t| t.trace_id).collect()
    };
    let ids = |ns: &[u8]| -> Vec<String> { ns.iter().map(|&n| tid(n).to_hex()).collect() };
    let nanos = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64;

    assert_eq!(
        list(pb::ListTracesRequest::default()).await,
        ids(&[4, 3, 2, 1])
    );
    let evaluated = pb::ListTracesRequest {
        status: Some(pb::TraceStatus::Evaluated as i32),
        ..Default::default()
    };
    assert_eq!(list(evaluated).await, ids(&[1]));
    let order = pb::ListTracesRequest {
        evaluator: Some("order".into()),
        ..Default::default()
    };
    assert_eq!(list(order).await, ids(&[2]));
    let low = pb::ListTracesRequest {
        max_score: Some(0.6),
        ..Default::default()
    };
    assert_eq!(list(low).await, ids(&[2]));
    let two = pb::ListTracesRequest {
        limit: 2,
        ..Default::default()
    };
    assert_eq!(list(two).await, ids(&[4, 3]));
    let since = |t: SystemTime| pb::ListTracesRequest {
        since_unix_nano: Some(nanos(t)),
        ..Default::default()
    };
    assert_eq!(list(since(before)).await, ids(&[4, 3, 2, 1]));
    assert_eq!(list(since(middle)).await, ids(&[4, 3]));
    assert_eq!(
        list(since(SystemTime::now() + Duration::from_secs(3600))).await,
        ids(&[])
    );

    let negative = pb::ListTracesRequest {
        since_unix_nano: Some(-1),
        ..Default::default()
    };
    let status = within(client.list_traces(negative)).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn watch_streams_new_and_revised_records_for_one_evaluator() {
    let h = Harness::start(64, 16).await;
    let mut client = h.client().await;
    let req = pb::WatchScoresRequest {
        evaluator: Some("count".into()),
        ..Default::default()
    };
    // Once the response arrives, the subscription exists.
    let mut stream = within(client.watch_scores(req)).await.unwrap().into_inner();

    h.put(record(
        1,
        TraceStatus::Evaluated,
        1,
        vec![score("order", 1.0)],
    ));
    h.put(record(
        2,
        TraceStatus::Evaluated,
        1,
        vec![score("count", 0.5)],
    ));
    h.put(record(3, TraceStatus::Unbound, 1, vec![]));
    h.put(record(
        2,
        TraceStatus::Evaluated,
        2,
        vec![score("count", 1.0)],
    ));

    let first = next(&mut stream).await;
    assert_eq!(
        (first.trace_id.as_str(), first.revision),
        (tid(2).to_hex().as_str(), 1)
    );
    assert_eq!(first.scores[0].score, Some(0.5));
    let revised = next(&mut stream).await;
    assert_eq!(
        (revised.trace_id.as_str(), revised.revision),
        (tid(2).to_hex().as_str(), 2)
    );
    assert_eq!(revised.scores[0].score, Some(1.0));
}

#[tokio::test]
async fn watch_filters_by_trace_and_status() {
    let h = Harness::start(64, 16).await;
    let mut client = h.client().await;
    let req = pb::WatchScoresRequest {
        trace_id: Some(tid(5).to_hex()),
        status: Some(pb::TraceStatus::Evaluated as i32),
        ..Default::default()
    };
    let mut stream = within(client.watch_scores(req)).await.unwrap().into_inner();

    h.put(record(
        5,
        TraceStatus::TimedOut,
        1,
        vec![score("count", 0.0)],
    ));
    h.put(record(
        6,
        TraceStatus::Evaluated,
        1,
        vec![score("count", 0.0)],
    ));
    h.put(record(
        5,
        TraceStatus::Evaluated,
        2,
        vec![score("count", 1.0)],
    ));
    let got = next(&mut stream).await;
    assert_eq!((got.trace_id, got.revision), (tid(5).to_hex(), 2));

    let bad = pb::WatchScoresRequest {
        trace_id: Some("xyz".into()),
        ..Default::default()
    };
    let status = within(client.watch_scores(bad)).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn a_slow_watcher_is_dropped_and_the_store_never_waits() {
    // A large store broadcast buffer, so it is the watcher's own one-record
    // buffer that overflows; small HTTP/2 windows, so a client that does not
    // read stops the server's sending after a few records.
    let h = Harness::start(4096, 1).await;
    let channel = within(
        h.endpoint()
            .initial_stream_window_size(65_535)
            .initial_connection_window_size(65_535)
            .connect(),
    )
    .await
    .unwrap();
    let mut slow = ScoresServiceClient::new(channel);
    let mut stream = within(slow.watch_scores(pb::WatchScoresRequest::default()))
        .await
        .unwrap()
        .into_inner();

    let big = json!({"reason": "x".repeat(8 * 1024)});
    let mut puts = 0u32;
    within(async {
        while h.dropped.load(Ordering::Relaxed) == 0 {
            assert!(puts < 10_000, "the slow watcher was never dropped");
            puts += 1;
            let mut r = record(1, TraceStatus::Evaluated, puts, vec![score("count", 1.0)]);
            r.scores[0].outcome.details = big.clone().into();
            h.put(r); // synchronous: it cannot wait for the watcher
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(
        h.store.get(&tid(1)).unwrap().revision,
        puts,
        "every put landed"
    );

    // Reading now: what was in flight, then the status that ended the stream.
    let mut received = 0;
    let status = loop {
        match within(stream.message()).await {
            Ok(Some(_)) => received += 1,
            Ok(None) => panic!("the stream ended without a status"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(status.message(), "subscriber too slow; reconnect");
    assert!(
        received < puts,
        "{received} of {puts} records reached the slow watcher"
    );
    assert_eq!(h.dropped.load(Ordering::Relaxed), 1);

    // Reconnecting works, and other watchers were never affected.
    let mut client = h.client().await;
    let mut again = within(client.watch_scores(pb::WatchScoresRequest::default()))
        .await
        .unwrap()
        .into_inner();
    h.put(record(2, TraceStatus::Evaluated, 1, vec![]));
    assert_eq!(next(&mut again).await.trace_id, tid(2).to_hex());
    assert_eq!(h.dropped.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn reflection_describes_the_service() {
    let h = Harness::start(16, 16).await;
    let channel = within(h.endpoint().connect()).await.unwrap();
    let mut client = ServerReflectionClient::new(channel);
    let ask = |m: MessageRequest| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(m),
    };
    // What grpcurl does: list, fetch the service's file, then its imports.
    let requests = tokio_stream::iter([
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol(
            "toolscore.v1.ScoresService".into(),
        )),
        ask(MessageRequest::FileByFilename(
            "google/protobuf/timestamp.proto".into(),
        )),
    ]);
    let mut responses = within(client.server_reflection_info(requests))
        .await
        .unwrap()
        .into_inner();
    let listed = within(responses.message()).await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = listed.message_response else {
        panic!("expected a service list, got {listed:?}");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"toolscore.v1.ScoresService"), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");

    let files = next_files(&mut responses).await;
    assert_eq!(files[0].name(), "toolscore/v1/scores.proto");
    assert_eq!(files[0].service[0].method.len(), 3);
    assert_eq!(files[0].dependency, ["google/protobuf/timestamp.proto"]);
    let imports = next_files(&mut responses).await;
    assert_eq!(imports[0].name(), "google/protobuf/timestamp.proto");
}

async fn next_files(
    responses: &mut Streaming<ServerReflectionResponse>,
) -> Vec<prost_types::FileDescriptorProto> {
    let r = within(responses.message()).await.unwrap().unwrap();
    let Some(MessageResponse::FileDescriptorResponse(files)) = r.message_response else {
        panic!("expected file descriptors, got {r:?}");
    };
    let decode = |b: &Vec<u8>| prost_types::FileDescriptorProto::decode(b.as_slice()).unwrap();
    files.file_descriptor_proto.iter().map(decode).collect()
}
