"""The MCP server of the openinference-mcp recorder: an MCPServer (mcp 2.x's FastMCP) with the four tools.

`build(tools)` makes it in-process. Run as a script it is the stdio server of the `*-stdio` scenarios: a child
process with its own TracerProvider (MCPInstrumentor + the SDK's own server spans), recording the truth of its
tool calls into $MCP_TRUTH_OUT (JSON list) when it exits; its spans are NOT in the fixture (another process).
"""

import atexit
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import harness  # noqa: E402


def build(tools):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("travel")
    for fn in tools.values():
        server.add_tool(fn)
    return server


if __name__ == "__main__":
    otel = harness.Otel("recording-openinference-mcp-server")
    from openinference.instrumentation.mcp import MCPInstrumentor

    MCPInstrumentor().instrument(tracer_provider=otel.tracer_provider)
    truth = harness.Truth()
    atexit.register(lambda: Path(os.environ["MCP_TRUTH_OUT"]).write_text(json.dumps(truth.calls)))
    build({f.__name__: truth.wrap(f) for f in harness.COMMON_TOOLS}).run("stdio")
