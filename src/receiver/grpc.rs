//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`
//! and `opentelemetry.proto.collector.logs.v1.LogsService/Export`.
//!
//! The servers are generated (build.rs) around [`RawCodec`], which hands
//! the handler the message's bytes: the receiver decodes them straight into
//! span records (`wire.rs`) instead of building prost's
//! `ExportTraceServiceRequest` first, and logs them as they came. Admission
//! ([`Admitted`]) runs before the message is read.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use tonic::body::Body;
use tonic::codec::{BufferSettings, Codec, CompressionEncoding, DecodeBuf, Decoder};
use tonic::codegen::{BoxFuture, StdError};
use tonic::server::NamedService;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::decode::decode;
use super::{Ingest, Refused, Signal, admit, ingest, log};
use crate::telemetry::Refusal;
use crate::wal::Kind;

// The generated code builds the codec with `Default`.
#[allow(clippy::default_constructed_unit_structs)]
mod generated {
    include!(concat!(
        env!("OUT_DIR"),
        "/opentelemetry.proto.collector.trace.v1.TraceService.rs"
    ));
    include!(concat!(
        env!("OUT_DIR"),
        "/opentelemetry.proto.collector.logs.v1.LogsService.rs"
    ));
}
use generated::logs_service_server::{LogsService, LogsServiceServer};
use generated::trace_service_server::{TraceService, TraceServiceServer};

/// The method both services export with (`/<service>/Export`).
const EXPORT: &str = "/Export";

/// The `TraceService` server, behind admission.
pub type TraceServer = Admitted<TraceServiceServer<Export>>;

/// The `LogsService` server, behind admission.
pub type LogsServer = Admitted<LogsServiceServer<Export>>;

/// The `TraceService` server: gzip in and out, decoded size capped.
pub fn service(ctx: Arc<Ingest>, max_decoding_message_size: usize) -> TraceServer {
    let server = TraceServiceServer::new(Export(ctx.clone()))
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(max_decoding_message_size);
    Admitted { ctx, inner: server }
}

/// The `LogsService` server, as [`service`].
pub fn logs_service(ctx: Arc<Ingest>, max_decoding_message_size: usize) -> LogsServer {
    let server = LogsServiceServer::new(Export(ctx.clone()))
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(max_decoding_message_size);
    Admitted { ctx, inner: server }
}

/// Waits for admission (see `admit`) before an export's message is read and
/// decoded, so requests held back do not hold their decoded spans.
#[derive(Clone)]
pub struct Admitted<S> {
    ctx: Arc<Ingest>,
    inner: S,
}

impl<S: NamedService> NamedService for Admitted<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> tower::Service<http::Request<B>> for Admitted<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The generated server is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let ctx = self.ctx.clone();
        let mut inner = self.inner.clone();
        Box::pin(async move {
            if req.uri().path().ends_with(EXPORT)
                && let Err(refused) = admit(&ctx).await
            {
                return Ok(status_of(refused).into_http());
            }
            inner.call(req).await
        })
    }
}

/// The export handler: decodes, logs, and hands the records to the assembler.
pub struct Export(Arc<Ingest>);

impl Export {
    async fn export(&self, bytes: &[u8], signal: Signal) -> Result<super::Ingested, Status> {
        let ctx = &self.0;
        let kind = match signal {
            Signal::Traces => Kind::OtlpProtobuf,
            Signal::Logs => Kind::OtlpLogsProtobuf,
        };
        let decoded = decode(kind, bytes, &ctx.keep).map_err(|e| {
            ctx.metrics.refuse(Refusal::Malformed);
            Status::invalid_argument(e)
        })?;
        let appended = log(ctx, kind, bytes, &decoded).map_err(status_of)?;
        ingest(ctx, "grpc", signal, decoded, appended)
            .await
            .map_err(status_of)
    }
}

#[tonic::async_trait]
impl TraceService for Export {
    async fn export(
        &self,
        request: tonic::Request<Bytes>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, Status> {
        let done = Export::export(self, &request.into_inner(), Signal::Traces).await?;
        Ok(tonic::Response::new(done.response()))
    }
}

#[tonic::async_trait]
impl LogsService for Export {
    async fn export(
        &self,
        request: tonic::Request<Bytes>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, Status> {
        let done = Export::export(self, &request.into_inner(), Signal::Logs).await?;
        Ok(tonic::Response::new(done.logs_response()))
    }
}

fn status_of(refused: Refused) -> Status {
    match refused {
        Refused::Unavailable { retry_after } => Status::with_error_details(
            Code::Unavailable,
            format!("toolscore is at capacity; retry after {retry_after:?}"),
            ErrorDetails::with_retry_info(Some(retry_after)),
        ),
        Refused::Invalid(msg) => Status::invalid_argument(msg),
    }
}

/// Hands over a request's message as its bytes (no copy when tonic holds
/// it in one buffer, as it does); encodes responses (`R`) with prost.
#[derive(Debug)]
pub struct RawCodec<R>(std::marker::PhantomData<fn() -> R>);

/// The trace service's codec.
pub type TraceCodec = RawCodec<ExportTraceServiceResponse>;
/// The logs service's codec.
pub type LogsCodec = RawCodec<ExportLogsServiceResponse>;

impl<R> Default for RawCodec<R> {
    fn default() -> Self {
        RawCodec(std::marker::PhantomData)
    }
}

impl<R: prost::Message + Send + 'static> Codec for RawCodec<R> {
    type Encode = R;
    type Decode = Bytes;
    type Encoder = tonic_prost::ProstEncoder<R>;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        tonic_prost::ProstEncoder::new(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawDecoder
    }
}

/// [`RawCodec`]'s decoder: the message's bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawDecoder;

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// tonic refuses a message over `max_decoding_message_size` with
/// OUT_OF_RANGE (a compressed one that inflates past it, with
/// RESOURCE_EXHAUSTED); the gRPC spec (and the OpenTelemetry Collector) use
/// RESOURCE_EXHAUSTED. Our handlers return neither, so on this server the
/// codes can only come from that limit; the refusal is counted
/// (`too_large`), as OTLP/HTTP counts its own. Applied as a server layer.
pub fn oversize_is_resource_exhausted(
    metrics: std::sync::Arc<crate::telemetry::Metrics>,
) -> impl Fn(http::Response<tonic::body::Body>) -> http::Response<tonic::body::Body> + Clone {
    move |mut res| {
        let status = |c: Code| http::HeaderValue::from(i32::from(c));
        let code = res.headers().get("grpc-status");
        if code == Some(&status(Code::OutOfRange)) {
            res.headers_mut()
                .insert("grpc-status", status(Code::ResourceExhausted));
            metrics.refuse(Refusal::TooLarge);
        } else if code == Some(&status(Code::ResourceExhausted)) {
            metrics.refuse(Refusal::TooLarge);
        }
        res
    }
}

/// The gRPC protocol's content type check, as a server layer: a request
/// whose `content-type` is not `application/grpc` (alone, or followed by
/// `+` or `;`) is answered with HTTP 415 instead of being handled as gRPC
/// (an OTLP/JSON client sending to the gRPC port over HTTP/2, say).
#[derive(Clone, Copy, Default)]
pub struct GrpcContentTypeLayer;

impl<S> tower::Layer<S> for GrpcContentTypeLayer {
    type Service = GrpcContentType<S>;

    fn layer(&self, inner: S) -> GrpcContentType<S> {
        GrpcContentType(inner)
    }
}

#[derive(Clone)]
pub struct GrpcContentType<S>(S);

/// Whether a `content-type` is gRPC's.
fn is_grpc(content_type: Option<&http::HeaderValue>) -> bool {
    let Some(v) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let v = v.trim_start();
    v.len() >= 16
        && v[..16].eq_ignore_ascii_case("application/grpc")
        && matches!(v.as_bytes().get(16), None | Some(b'+' | b';'))
}

impl<S, B> tower::Service<http::Request<B>> for GrpcContentType<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = futures_util::future::Either<
        std::future::Ready<Result<Self::Response, S::Error>>,
        S::Future,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if is_grpc(req.headers().get(http::header::CONTENT_TYPE)) {
            return futures_util::future::Either::Right(self.0.call(req));
        }
        let mut res = http::Response::new(tonic::body::Body::empty());
        *res.status_mut() = http::StatusCode::UNSUPPORTED_MEDIA_TYPE;
        res.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/grpc"),
        );
        futures_util::future::Either::Left(std::future::ready(Ok(res)))
    }
}

#[cfg(test)]
mod content_type_tests {
    use super::is_grpc;

    #[test]
    fn only_grpc_content_types_are_grpc() {
        let is = |v: &'static str| is_grpc(Some(&http::HeaderValue::from_static(v)));
        assert!(is("application/grpc"));
        assert!(is("application/grpc+proto"));
        assert!(is("application/grpc; charset=utf-8"));
        assert!(is("Application/GRPC"));
        assert!(!is("application/json"));
        assert!(!is("application/grpcx"));
        assert!(!is("application/grpc-web"));
        assert!(!is_grpc(None));
    }
}
