//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`.
//!
//! The service is written out by hand rather than generated, for one reason:
//! its codec decodes the request straight into [`Span`](crate::span::Span)s
//! (`wire.rs`) instead of building prost's `ExportTraceServiceRequest` first.
//! Everything else is what tonic's generated server does: gzip in and out,
//! the decoded size capped, `Unimplemented` for other methods.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Buf;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use tonic::body::Body;
use tonic::codec::{BufferSettings, Codec, CompressionEncoding, DecodeBuf, Decoder};
use tonic::codegen::{BoxFuture, StdError};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::wire::{self, Decoded};
use super::{Ingest, Refused, admit, ingest, log};
use crate::telemetry::Refusal;
use crate::wal::{Appended, Kind};

const EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// The `TraceService` server.
#[derive(Clone)]
pub struct TraceServer {
    ctx: Arc<Ingest>,
    max_decoding_message_size: usize,
}

impl NamedService for TraceServer {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
}

/// The `TraceService` server: gzip in and out, decoded size capped.
pub fn service(ctx: Arc<Ingest>, max_decoding_message_size: usize) -> TraceServer {
    TraceServer {
        ctx,
        max_decoding_message_size,
    }
}

impl<B> tower::Service<http::Request<B>> for TraceServer
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let (ctx, max) = (self.ctx.clone(), self.max_decoding_message_size);
        Box::pin(async move {
            if req.uri().path() != EXPORT {
                return Ok(Status::unimplemented("unknown method").into_http());
            }
            // Before the message is read and decoded (see `admit`).
            if let Err(refused) = admit(&ctx).await {
                return Ok(status_of(refused).into_http());
            }
            let codec = SpanCodec { ctx: ctx.clone() };
            let mut grpc = Grpc::new(codec)
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(max);
            Ok(grpc.unary(Export(ctx), req).await)
        })
    }
}

struct Export(Arc<Ingest>);

/// A decoded request, and its append to the write-ahead log when it is on.
struct Logged(Decoded, Option<Appended>);

impl UnaryService<Logged> for Export {
    type Response = ExportTraceServiceResponse;
    type Future = BoxFuture<tonic::Response<Self::Response>, Status>;

    fn call(&mut self, request: tonic::Request<Logged>) -> Self::Future {
        let ctx = self.0.clone();
        Box::pin(async move {
            let Logged(decoded, appended) = request.into_inner();
            match ingest(&ctx, "grpc", decoded, appended).await {
                Ok(done) => Ok(tonic::Response::new(done.response())),
                Err(refused) => Err(status_of(refused)),
            }
        })
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

/// Decodes requests with `wire::decode_request`; encodes responses with prost.
struct SpanCodec {
    ctx: Arc<Ingest>,
}

impl Codec for SpanCodec {
    type Encode = ExportTraceServiceResponse;
    type Decode = Logged;
    type Encoder = tonic_prost::ProstEncoder<ExportTraceServiceResponse>;
    type Decoder = SpanDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        tonic_prost::ProstEncoder::new(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        SpanDecoder {
            ctx: self.ctx.clone(),
        }
    }
}

struct SpanDecoder {
    ctx: Arc<Ingest>,
}

impl Decoder for SpanDecoder {
    type Item = Logged;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Logged>, Status> {
        let len = src.remaining();
        // tonic hands over one contiguous buffer per message; copy only if not.
        let copied;
        let bytes = if src.chunk().len() == len {
            src.chunk()
        } else {
            copied = src.copy_to_bytes(len);
            &copied[..]
        };
        let decoded = match wire::decode_request(bytes, &self.ctx.keep) {
            Ok(d) => d,
            Err(e) => {
                self.ctx.metrics.refuse(Refusal::Malformed);
                return Err(Status::invalid_argument(e.to_string()));
            }
        };
        // Logged from the message's own bytes: no copy but the log's.
        let appended = log(&self.ctx, Kind::OtlpProtobuf, bytes).map_err(status_of)?;
        if src.remaining() > 0 {
            src.advance(src.remaining());
        }
        Ok(Some(Logged(decoded, appended)))
    }
}

/// tonic refuses a message over `max_decoding_message_size` with
/// OUT_OF_RANGE; the gRPC spec (and the OpenTelemetry Collector) use
/// RESOURCE_EXHAUSTED. Our handlers never return OUT_OF_RANGE, so on this
/// server the code can only come from that limit. Applied as a server layer.
pub fn oversize_is_resource_exhausted<B>(mut res: http::Response<B>) -> http::Response<B> {
    let out_of_range = i32::from(Code::OutOfRange).to_string();
    if res
        .headers()
        .get("grpc-status")
        .is_some_and(|v| v.as_bytes() == out_of_range.as_bytes())
    {
        let code = i32::from(Code::ResourceExhausted).to_string();
        if let Ok(v) = http::HeaderValue::from_str(&code) {
            res.headers_mut().insert("grpc-status", v);
        }
    }
    res
}
