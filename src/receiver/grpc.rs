//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tonic::codec::CompressionEncoding;
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::{Refused, ingest};
use crate::assembler::AssemblerHandle;
use crate::telemetry::Metrics;

pub struct OtlpTraceService {
    handle: AssemblerHandle,
    metrics: Arc<Metrics>,
    retry_after: Duration,
}

/// The `TraceService` server: gzip in and out, decoded size capped.
pub fn service(
    handle: AssemblerHandle,
    metrics: Arc<Metrics>,
    retry_after: Duration,
    max_decoding_message_size: usize,
) -> TraceServiceServer<OtlpTraceService> {
    TraceServiceServer::new(OtlpTraceService {
        handle,
        metrics,
        retry_after,
    })
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
        match ingest(
            &self.handle,
            &self.metrics,
            "grpc",
            &req.resource_spans,
            self.retry_after,
        )
        .await
        {
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
