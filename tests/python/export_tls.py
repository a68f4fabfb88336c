"""Sends one agent trace (a root span and a tool call) to toolscore with the
OpenTelemetry Python SDK's OTLP exporter, as an agent would: over TLS, the CA
from a file, a bearer token in the headers.

    export_tls.py grpc|http ENDPOINT CA_FILE TOKEN

Prints the trace ID and exits 0 when the exporter reports success, 1 when it
reports failure.
"""

import os
import sys

protocol, endpoint, ca_file, token = sys.argv[1:5]
headers = {"authorization": f"Bearer {token}"}

if protocol == "grpc":
    # The gRPC exporter takes its CA from the SDK's environment variable.
    os.environ["OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"] = ca_file
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=False, headers=headers, timeout=10)
else:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(
        endpoint=f"{endpoint}/v1/traces", certificate_file=ca_file, headers=headers, timeout=10
    )

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

spans = InMemorySpanExporter()
provider = TracerProvider(resource=Resource.create({"service.name": "python-agent"}))
provider.add_span_processor(SimpleSpanProcessor(spans))
tracer = provider.get_tracer("toolscore-tls-test")
with tracer.start_as_current_span("agent") as root:
    with tracer.start_as_current_span("execute_tool get_weather") as tool:
        tool.set_attribute("gen_ai.operation.name", "execute_tool")
        tool.set_attribute("gen_ai.tool.name", "get_weather")
        tool.set_attribute("gen_ai.tool.call.arguments", '{"city": "Paris"}')
    trace_id = format(root.get_span_context().trace_id, "032x")

result = exporter.export(spans.get_finished_spans())
exporter.shutdown()
print(trace_id)
sys.exit(0 if result == SpanExportResult.SUCCESS else 1)
