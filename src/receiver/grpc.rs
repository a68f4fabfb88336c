//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`.

use std::sync::Arc;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tonic::codec::CompressionEncoding;
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::{Ingest, Refused, ingest};

pub struct OtlpTraceService {
    ctx: Arc<Ingest>,
}

/// The `TraceService` server: gzip in and out, decoded size capped.
pub fn service(
    ctx: Arc<Ingest>,
    max_decoding_message_size: usize,
) -> TraceServiceServer<OtlpTraceService> {
    TraceServiceServer::new(OtlpTraceService { ctx })
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(max_decoding_message_size)
}

#[tonic::async_trait]
impl TraceService for OtlpTraceService {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let req = request.into_inner();
        match ingest(&self.ctx, "grpc", &req.resource_spans).await {
            Ok(done) => Ok(Response::new(done.response())),
            Err(Refused::Unavailable { retry_after }) => Err(Status::with_error_details(
                Code::Unavailable,
                format!(
                    "toolscore is at capacity; retry after {}s",
                    retry_after.as_secs()
                ),
                ErrorDetails::with_retry_info(Some(retry_after)),
            )),
            Err(Refused::Invalid(msg)) => Err(Status::invalid_argument(msg)),
        }
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
