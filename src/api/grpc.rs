//! The gRPC query API, `toolscore.v1.ScoresService` (DESIGN §6,
//! `proto/toolscore/v1/scores.proto`): the same results as the HTTP API, and
//! `WatchScores`, a stream of results as the store takes them.
//!
//! Watching never slows the pipeline (`super::watch`, shared with the HTTP
//! API's server-sent events): a subscriber that falls behind is ended with
//! RESOURCE_EXHAUSTED and counted in [`ScoresApi::dropped`]; it reconnects
//! and catches up with `ListTraces`.
//!
//! Wiring (the API gRPC port, 8081 by default):
//!
//! ```ignore
//! let api = ScoresApi::new(store, config.api.watch_buffer)
//!     .with_max_list_limit(config.api.max_list_limit)
//!     .with_shutdown(api_stop.clone()); // ends watch streams, so the drain can finish
//! let dropped = api.dropped(); // export as a counter if wanted
//! health_reporter.set_serving::<ScoresServiceServer<ScoresApi>>().await;
//! tonic::transport::Server::builder()
//!     .add_service(health_service)
//!     .add_service(api.into_server())
//!     .add_service(reflection_service()?)
//!     .serve_with_incoming_shutdown(TcpListenerStream::new(listener), api_stop.cancelled_owned())
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};
use tonic_reflection::server::v1::{ServerReflection, ServerReflectionServer};

use super::ErrorKind;
use super::watch::{TOO_SLOW, WatchFilter, Watched, Watchers};
use crate::criteria::Binding;
use crate::evaluator;
use crate::span::TraceId;
use crate::store::{ListFilter, ResultStore, StoredResult, TraceStatus};

use pb::scores_service_server::{ScoresService, ScoresServiceServer};

/// The code generated from `proto/toolscore/v1/scores.proto` by `build.rs`.
pub mod pb {
    #![allow(
        clippy::all,
        clippy::pedantic,
        clippy::nursery,
        clippy::unwrap_used,
        clippy::expect_used,
        missing_docs,
        unreachable_pub
    )]

    tonic::include_proto!("toolscore.v1");

    /// The encoded descriptors of `toolscore.v1` and its imports, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("toolscore_v1_descriptor");
}

/// `ListTraces` with `limit: 0`.
pub const DEFAULT_LIST_LIMIT: usize = 100;
/// The largest `limit` unless [`ScoresApi::with_max_list_limit`] says otherwise.
pub const MAX_LIST_LIMIT: usize = 1000;
/// Concurrent `WatchScores` streams unless [`ScoresApi::with_max_watchers`] says otherwise.
pub const MAX_WATCHERS: usize = 1024;

/// The `ScoresService` implementation. Build it with [`ScoresApi::new`],
/// serve it with [`ScoresApi::into_server`].
pub struct ScoresApi {
    store: Arc<dyn ResultStore>,
    /// Records buffered per watch subscriber before it is dropped as too slow.
    watch_buffer: usize,
    /// Watch subscribers dropped as too slow, since start.
    dropped: Arc<AtomicU64>,
    max_list_limit: usize,
    max_watchers: usize,
    /// Cancelled when the server drains: open watch streams end (UNAVAILABLE),
    /// otherwise a graceful shutdown would wait for them forever.
    shutdown: CancellationToken,
    watchers: Watchers,
}

impl ScoresApi {
    /// `watch_buffer` (at least 1) bounds each `WatchScores` subscriber's backlog.
    pub fn new(store: Arc<dyn ResultStore>, watch_buffer: usize) -> ScoresApi {
        let shutdown = CancellationToken::new();
        ScoresApi {
            store,
            watch_buffer,
            dropped: Arc::new(AtomicU64::new(0)),
            max_list_limit: MAX_LIST_LIMIT,
            max_watchers: MAX_WATCHERS,
            watchers: Watchers::new(watch_buffer, MAX_WATCHERS, shutdown.clone()),
            shutdown,
        }
    }

    /// Caps `ListTracesRequest.limit` (`api.max_list_limit`).
    pub fn with_max_list_limit(mut self, max: usize) -> ScoresApi {
        self.max_list_limit = max.max(1);
        self
    }

    /// Caps concurrent `WatchScores` streams; one more is RESOURCE_EXHAUSTED.
    pub fn with_max_watchers(mut self, max: usize) -> ScoresApi {
        self.max_watchers = max;
        self.watchers = Watchers::new(self.watch_buffer, max, self.shutdown.clone());
        self
    }

    /// Ends every open watch stream with UNAVAILABLE when `token` is cancelled.
    pub fn with_shutdown(mut self, token: CancellationToken) -> ScoresApi {
        self.watchers = Watchers::new(self.watch_buffer, self.max_watchers, token.clone());
        self.shutdown = token;
        self
    }

    /// The count of watch subscribers dropped as too slow (shared, live).
    pub fn dropped(&self) -> Arc<AtomicU64> {
        self.dropped.clone()
    }

    /// The tonic service: gzip accepted, and used for responses when the
    /// client accepts it.
    pub fn into_server(self) -> ScoresServiceServer<ScoresApi> {
        ScoresServiceServer::new(self)
            .accept_compressed(CompressionEncoding::Gzip)
            .send_compressed(CompressionEncoding::Gzip)
    }
}

/// gRPC server reflection (v1) for `toolscore.v1` and `grpc.health.v1`, so
/// `grpcurl` works without the proto files. Fails only if the descriptors
/// compiled into the binary are corrupt.
pub fn reflection_service()
-> Result<ServerReflectionServer<impl ServerReflection>, tonic_reflection::server::Error> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
}

/// Everything the API gRPC port serves besides health, with default limits
/// and no shutdown signal: the `ScoresService` server, the reflection server
/// and the dropped-subscriber counter. For the configurable variant, build
/// [`ScoresApi`] and call [`reflection_service`] directly.
pub fn router_services(
    store: Arc<dyn ResultStore>,
    watch_buffer: usize,
) -> Result<
    (
        ScoresServiceServer<ScoresApi>,
        ServerReflectionServer<impl ServerReflection>,
        Arc<AtomicU64>,
    ),
    tonic_reflection::server::Error,
> {
    let api = ScoresApi::new(store, watch_buffer);
    let dropped = api.dropped();
    Ok((api.into_server(), reflection_service()?, dropped))
}

#[tonic::async_trait]
impl ScoresService for ScoresApi {
    async fn get_scores(
        &self,
        request: Request<pb::GetScoresRequest>,
    ) -> Result<Response<pb::TraceScores>, Status> {
        let trace_id = parse_trace_id(&request.get_ref().trace_id)?;
        let read = crate::store::get(&self.store, trace_id).await;
        match read.map_err(|e| ErrorKind::Unavailable.grpc_status(e.to_string()))? {
            Some(r) => Ok(Response::new(pb::TraceScores::try_from(r.as_ref())?)),
            None => Err(ErrorKind::NotFound.grpc_status(format!("trace {trace_id} is not known"))),
        }
    }

    async fn list_traces(
        &self,
        request: Request<pb::ListTracesRequest>,
    ) -> Result<Response<pb::ListTracesResponse>, Status> {
        let filter = self.list_filter(request.get_ref())?;
        let traces = crate::store::list(&self.store, filter)
            .await
            .map_err(|e| ErrorKind::Unavailable.grpc_status(e.to_string()))?
            .iter()
            .map(|r| pb::TraceScores::try_from(r.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Response::new(pb::ListTracesResponse { traces }))
    }

    type WatchScoresStream =
        std::pin::Pin<Box<dyn Stream<Item = Result<pb::TraceScores, Status>> + Send>>;

    async fn watch_scores(
        &self,
        request: Request<pb::WatchScoresRequest>,
    ) -> Result<Response<Self::WatchScoresStream>, Status> {
        let filter = watch_filter(request.get_ref())?;
        // Subscribed before answering: once the client has the response
        // headers, nothing stored afterwards can be missed.
        let dropped = self.dropped.clone();
        let too_slow = move || {
            dropped.fetch_add(1, Ordering::Relaxed);
        };
        let Some(rx) = self
            .watchers
            .subscribe(self.store.subscribe(), filter, too_slow)
        else {
            return Err(ErrorKind::ResourceExhausted
                .grpc_status("too many WatchScores streams; retry later"));
        };
        let stream = ReceiverStream::new(rx).map(|watched| match watched {
            Watched::Record(r) => pb::TraceScores::try_from(r.as_ref()),
            // Not in `ErrorKind`'s HTTP meaning: a streaming-only condition.
            Watched::TooSlow => Err(Status::resource_exhausted(TOO_SLOW)),
            Watched::ShuttingDown => {
                Err(ErrorKind::Unavailable.grpc_status("the server is shutting down; reconnect"))
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

impl ScoresApi {
    fn list_filter(&self, req: &pb::ListTracesRequest) -> Result<ListFilter, Status> {
        let status = req.status.map(parse_status).transpose()?;
        if req.max_score.is_some_and(f64::is_nan) {
            return Err(invalid("max_score must be a number, got NaN"));
        }
        let since = match req.since_unix_nano {
            None => None,
            Some(n) => {
                let n = u64::try_from(n).map_err(|_| {
                    invalid(format!("since_unix_nano must not be negative, got {n}"))
                })?;
                UNIX_EPOCH.checked_add(Duration::from_nanos(n))
            }
        };
        let limit = match req.limit {
            0 => DEFAULT_LIST_LIMIT,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        Ok(ListFilter {
            status,
            evaluator: req.evaluator.clone(),
            max_score: req.max_score,
            since,
            limit: limit.min(self.max_list_limit),
            ..ListFilter::default()
        })
    }
}

fn invalid(message: impl Into<String>) -> Status {
    ErrorKind::InvalidArgument.grpc_status(message)
}

fn parse_trace_id(s: &str) -> Result<TraceId, Status> {
    TraceId::parse_hex(s).map_err(|e| invalid(e.to_string()))
}

fn parse_status(value: i32) -> Result<TraceStatus, Status> {
    match pb::TraceStatus::try_from(value) {
        Ok(pb::TraceStatus::Pending) => Ok(TraceStatus::Pending),
        Ok(pb::TraceStatus::Evaluated) => Ok(TraceStatus::Evaluated),
        Ok(pb::TraceStatus::Unbound) => Ok(TraceStatus::Unbound),
        Ok(pb::TraceStatus::TimedOut) => Ok(TraceStatus::TimedOut),
        Ok(pb::TraceStatus::Unspecified) | Err(_) => Err(invalid(format!(
            "status must be PENDING, EVALUATED, UNBOUND or TIMED_OUT, got {value}"
        ))),
    }
}

/// A `WatchScoresRequest`'s filters.
fn watch_filter(req: &pb::WatchScoresRequest) -> Result<WatchFilter, Status> {
    Ok(WatchFilter {
        status: req.status.map(parse_status).transpose()?,
        evaluator: req.evaluator.clone(),
        trace_id: req.trace_id.as_deref().map(parse_trace_id).transpose()?,
        max_score: None,
    })
}

/// A stored record that cannot be read back: the service's fault, logged
/// with its detail (as the HTTP API's 5xx, the status carries none).
fn unreadable(e: crate::store::CallsError) -> Status {
    tracing::warn!(error = %e, "a stored result could not be read");
    ErrorKind::Internal.grpc_status("a stored result could not be read")
}

impl TryFrom<&StoredResult> for pb::TraceScores {
    type Error = Status;

    fn try_from(r: &StoredResult) -> Result<pb::TraceScores, Status> {
        Ok(pb::TraceScores {
            trace_id: r.trace_id.to_hex(),
            status: pb_status(r.status) as i32,
            complete: r.complete,
            revision: r.revision,
            evaluated_at: r.evaluated_at.map(prost_types::Timestamp::from),
            root: r.root.as_ref().map(|root| pb::RootSpan {
                name: root.name.clone(),
                service: root.service.clone(),
                start_time_unix_nano: root.start_time_unix_nano,
                end_time_unix_nano: root.end_time_unix_nano,
                span_id: root.span_id.to_hex(),
            }),
            binding: r.binding.as_ref().map(pb_binding),
            tool_calls: u32::try_from(r.calls().map_err(unreadable)?.len()).unwrap_or(u32::MAX),
            content_captured: r.content_captured,
            scores: r.scores.iter().map(pb_score).collect(),
        })
    }
}

fn pb_status(s: TraceStatus) -> pb::TraceStatus {
    match s {
        TraceStatus::Pending => pb::TraceStatus::Pending,
        TraceStatus::Evaluated => pb::TraceStatus::Evaluated,
        TraceStatus::Unbound => pb::TraceStatus::Unbound,
        TraceStatus::TimedOut => pb::TraceStatus::TimedOut,
    }
}

fn pb_binding(b: &Binding) -> pb::Binding {
    match b {
        Binding::EvalSet { eval_set, item } => pb::Binding {
            source: "eval_set".into(),
            eval_set: Some(eval_set.to_string()),
            item: Some(item.to_string()),
            rule: None,
        },
        Binding::Rule { rule } => pb::Binding {
            source: "rule".into(),
            rule: Some(rule.to_string()),
            ..pb::Binding::default()
        },
        Binding::Default => pb::Binding {
            source: "default".into(),
            ..pb::Binding::default()
        },
    }
}

fn pb_score(s: &crate::store::Score) -> pb::Score {
    let o = &s.outcome;
    pb::Score {
        evaluator_id: s.evaluator_id.to_string(),
        evaluator_type: s.evaluator_type.id().to_owned(),
        status: match o.status {
            evaluator::Status::Ok => pb::ScoreStatus::Ok,
            evaluator::Status::Error => pb::ScoreStatus::Error,
            evaluator::Status::Pending => pb::ScoreStatus::Pending,
            evaluator::Status::Skipped => pb::ScoreStatus::Skipped,
        } as i32,
        score: o.score,
        score_is_int: o.score_is_int,
        passed: o.passed,
        threshold: o.threshold,
        details_json: o.details.text().into_owned(),
        error: o.error.clone(),
    }
}

/// tonic answers a request it cannot decode (bad protobuf, a string field
/// that is not UTF-8) with INTERNAL; the client sent it, so the API answers
/// INVALID_ARGUMENT, as its error table says. Only prost's decode message
/// is rewritten: a real internal error stays INTERNAL. Applied as a server
/// layer.
pub fn decode_error_is_invalid_argument<B>(mut res: http::Response<B>) -> http::Response<B> {
    let internal = i32::from(tonic::Code::Internal).to_string();
    let headers = res.headers();
    let is_decode_error = headers
        .get("grpc-status")
        .is_some_and(|v| v.as_bytes() == internal.as_bytes())
        && headers.get("grpc-message").is_some_and(|m| {
            let m = m.as_bytes();
            m.starts_with(b"failed to decode Protobuf message")
                || m.starts_with(b"failed%20to%20decode%20Protobuf%20message")
        });
    if is_decode_error {
        let code = i32::from(tonic::Code::InvalidArgument).to_string();
        if let Ok(v) = http::HeaderValue::from_str(&code) {
            res.headers_mut().insert("grpc-status", v);
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use std::time::{Instant, SystemTime};

    use tokio_stream::StreamExt;

    use super::*;
    use crate::evaluator::{EvaluatorType, Outcome};
    use crate::store::{MemoryStore, Score};

    fn record(id: u8, evaluator: &str) -> StoredResult {
        let mut r = StoredResult::pending(TraceId([id; 16]));
        r.status = TraceStatus::Evaluated;
        r.revision = 1;
        r.evaluated_at = Some(SystemTime::now());
        r.scores.push(Score {
            evaluator_id: evaluator.into(),
            evaluator_type: EvaluatorType::Count,
            outcome: Outcome::ok(1.0, serde_json::json!({"k": "v"})).into(),
        });
        r
    }

    fn api(store_buffer: usize, watch_buffer: usize) -> (Arc<MemoryStore>, ScoresApi) {
        let store = Arc::new(MemoryStore::new(100, Duration::from_secs(60), store_buffer));
        let api = ScoresApi::new(store.clone(), watch_buffer);
        (store, api)
    }

    async fn next(
        s: &mut <ScoresApi as ScoresService>::WatchScoresStream,
    ) -> Option<Result<pb::TraceScores, Status>> {
        tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .expect("stream stalled")
    }

    #[test]
    fn error_outcomes_and_bindings_convert() {
        let mut r = record(1, "count");
        r.scores[0].outcome = Outcome::error("boom").into();
        r.binding = Some(Binding::Rule { rule: "r1".into() });
        let pb = pb::TraceScores::try_from(&r).unwrap();
        let s = &pb.scores[0];
        assert_eq!(s.status, pb::ScoreStatus::Error as i32);
        assert_eq!((s.score, s.error.as_deref()), (None, Some("boom")));
        assert_eq!(s.details_json, "null");
        let b = pb.binding.unwrap();
        assert_eq!(
            (b.source.as_str(), b.rule.as_deref(), b.item),
            ("rule", Some("r1"), None)
        );
        assert!(pb.root.is_none());
    }

    #[tokio::test]
    async fn a_full_buffer_ends_the_stream_without_blocking_the_store() {
        let (store, api) = api(1024, 2);
        let dropped = api.dropped();
        let req = Request::new(pb::WatchScoresRequest::default());
        let mut stream = api.watch_scores(req).await.unwrap().into_inner();
        for i in 1..=10 {
            store.put(record(i, "count"), Instant::now());
        }
        // Two records fit; then the status that ends the stream.
        assert_eq!(
            next(&mut stream).await.unwrap().unwrap().trace_id,
            TraceId([1; 16]).to_hex()
        );
        assert_eq!(
            next(&mut stream).await.unwrap().unwrap().trace_id,
            TraceId([2; 16]).to_hex()
        );
        let status = next(&mut stream).await.unwrap().unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert_eq!(status.message(), TOO_SLOW);
        assert!(next(&mut stream).await.is_none());
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        assert_eq!(api.watchers.open(), 0, "the slot is given back");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_lagging_forwarder_ends_the_stream() {
        // On one thread the forwarder cannot run during the puts, so the
        // store's 4-record broadcast buffer overflows.
        let (store, api) = api(4, 64);
        let req = Request::new(pb::WatchScoresRequest::default());
        let mut stream = api.watch_scores(req).await.unwrap().into_inner();
        for i in 1..=10 {
            store.put(record(i, "count"), Instant::now());
        }
        let status = next(&mut stream).await.unwrap().unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert_eq!(api.dropped().load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn shutdown_ends_watch_streams_and_watchers_are_capped() {
        let (_store, api) = api(8, 8);
        let stop = CancellationToken::new();
        let api = api.with_shutdown(stop.clone()).with_max_watchers(1);
        let req = || Request::new(pb::WatchScoresRequest::default());
        let mut stream = api.watch_scores(req()).await.unwrap().into_inner();
        let refused = api.watch_scores(req()).await.err().unwrap();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        stop.cancel();
        let status = next(&mut stream).await.unwrap().unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert!(next(&mut stream).await.is_none());
        assert_eq!(api.dropped().load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn bad_filters_are_invalid_arguments() {
        let (_store, api) = api(8, 8);
        let watch = |r: pb::WatchScoresRequest| api.watch_scores(Request::new(r));
        let bad_id = pb::WatchScoresRequest {
            trace_id: Some("xyz".into()),
            ..Default::default()
        };
        assert_eq!(
            watch(bad_id).await.err().unwrap().code(),
            tonic::Code::InvalidArgument
        );
        let unspecified = pb::WatchScoresRequest {
            status: Some(0),
            ..Default::default()
        };
        assert_eq!(
            watch(unspecified).await.err().unwrap().code(),
            tonic::Code::InvalidArgument
        );
        let list = |r: pb::ListTracesRequest| api.list_traces(Request::new(r));
        let negative = pb::ListTracesRequest {
            since_unix_nano: Some(-1),
            ..Default::default()
        };
        assert_eq!(
            list(negative).await.err().unwrap().code(),
            tonic::Code::InvalidArgument
        );
        let nan = pb::ListTracesRequest {
            max_score: Some(f64::NAN),
            ..Default::default()
        };
        assert_eq!(
            list(nan).await.err().unwrap().code(),
            tonic::Code::InvalidArgument
        );
        let unknown = pb::ListTracesRequest {
            status: Some(99),
            ..Default::default()
        };
        assert_eq!(
            list(unknown).await.err().unwrap().code(),
            tonic::Code::InvalidArgument
        );
    }
}
