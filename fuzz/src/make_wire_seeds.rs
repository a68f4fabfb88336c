//! Writes fuzz/corpus/wire_decode/ from fuzz/corpus/otlp_json/: each
//! OTLP/JSON seed encoded as the protobuf request the gRPC and HTTP
//! receivers decode. Run from fuzz/: `cargo +nightly run --bin make_wire_seeds`.

use std::fs;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

fn main() -> std::io::Result<()> {
    fs::create_dir_all("corpus/wire_decode")?;
    let mut n = 0;
    for entry in fs::read_dir("corpus/otlp_json")? {
        let path = entry?.path();
        let Ok(req) = serde_json::from_slice::<ExportTraceServiceRequest>(&fs::read(&path)?) else {
            continue;
        };
        let name = path.file_name().unwrap_or_default();
        fs::write(std::path::Path::new("corpus/wire_decode").join(name), req.encode_to_vec())?;
        n += 1;
    }
    eprintln!("{n} protobuf seeds in corpus/wire_decode");
    Ok(())
}
