//! Compiles the gRPC query API (`proto/toolscore/v1/`) with the vendored
//! `protoc`, so a build needs no system-wide protoc, and writes the encoded
//! file descriptor set that server reflection serves. Generates the OTLP
//! trace and logs services' servers around the receiver's own codec.

use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);

    // The path is handed to prost-build directly rather than through the
    // `PROTOC` environment variable: setting it would take `unsafe`.
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);

    let protos = [PathBuf::from("proto/toolscore/v1/scores.proto")];
    // The vendored include directory holds `google/protobuf/timestamp.proto`.
    let includes = [PathBuf::from("proto"), protoc_bin_vendored::include_path()?];
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .file_descriptor_set_path(out_dir.join("toolscore_v1_descriptor.bin"))
        .compile_with_config(config, &protos, &includes)?;

    // OTLP's `TraceService` and `LogsService`, whose codec hands the
    // handler the message's bytes: the receiver decodes them itself
    // (src/receiver/wire.rs, decode.rs) and logs them to the write-ahead
    // log as they came.
    let services = [
        (
            "trace",
            "TraceService",
            "ExportTraceServiceResponse",
            "TraceCodec",
        ),
        (
            "logs",
            "LogsService",
            "ExportLogsServiceResponse",
            "LogsCodec",
        ),
    ]
    .map(|(package, service, response, codec)| {
        let export = tonic_prost_build::manual::Method::builder()
            .name("export")
            .route_name("Export")
            .input_type("bytes::Bytes")
            .output_type(format!(
                "opentelemetry_proto::tonic::collector::{package}::v1::{response}"
            ))
            .codec_path(format!("crate::receiver::grpc::{codec}"))
            .build();
        tonic_prost_build::manual::Service::builder()
            .name(service)
            .package(format!("opentelemetry.proto.collector.{package}.v1"))
            .method(export)
            .build()
    });
    tonic_prost_build::manual::Builder::new()
        .build_client(false)
        .compile(&services);
    Ok(())
}
