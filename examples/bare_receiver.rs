//! The reference toolscore's intake is measured against: a bare OTLP/gRPC
//! receiver (tonic + prost, the service's allocator) that decodes each
//! request into prost's structs and drops it. `perf/ab.sh`'s `bare` variant
//! runs it in turn with toolscore under the same load, and its `exporter`
//! variant as the sink of toolscore's exported results (so it also accepts
//! logs and metrics, dropped the same way).
//!
//! `cargo run --release --example bare_receiver -- [address]` (default
//! 127.0.0.1:14317).

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tonic::codec::CompressionEncoding::Gzip;
use tonic::{Request, Response, Status};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

struct DecodeAndDrop;

#[tonic::async_trait]
impl TraceService for DecodeAndDrop {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        std::hint::black_box(request.into_inner());
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for DecodeAndDrop {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        std::hint::black_box(request.into_inner());
        Ok(Response::new(ExportLogsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for DecodeAndDrop {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        std::hint::black_box(request.into_inner());
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:14317".to_owned())
        .parse()?;
    // toolscore's default cap (receivers.grpc.max_recv_msg_size_bytes).
    // The exporter gzips its requests (`exporter.gzip`, on by default).
    let service = TraceServiceServer::new(DecodeAndDrop)
        .max_decoding_message_size(64 << 20)
        .accept_compressed(Gzip);
    tonic::transport::Server::builder()
        .add_service(service)
        .add_service(LogsServiceServer::new(DecodeAndDrop).accept_compressed(Gzip))
        .add_service(MetricsServiceServer::new(DecodeAndDrop).accept_compressed(Gzip))
        .serve(address)
        .await?;
    Ok(())
}
