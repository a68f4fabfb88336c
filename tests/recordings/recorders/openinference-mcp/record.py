"""openinference-mcp: tools served by an MCP server (mcp 2.x MCPServer), called through an MCP client by an agent
loop over Chat Completions, with openinference-instrumentation-mcp (trace context propagation through the MCP
requests' `_meta`) and openinference-instrumentation-openai (LLM spans).

The mcp 2.x SDK traces itself (tracer `mcp-python-sdk`, on as soon as a global TracerProvider is set): a CLIENT
span `MCP send <method> [<tool>]` per request sent and a SERVER span `<method> [<tool>]` per request handled,
W3C trace context injected into `_meta`. MCPInstrumentor adds no spans of its own.

The loop (`mcp_chat_loop`) is the user's own async loop: the MCP server's tools are offered to the model as
Chat Completions functions under their MCP names, each requested call becomes `client.call_tool(name, args)`
and the text content of the result goes back as the tool message (for the failure: MCP's error text,
`isError: true`).

Scenarios:
  chat-loop-http       the server runs in this process (uvicorn thread, streamable HTTP on loopback); the client
                       connects to its URL: client AND server spans are in the fixture
  chat-loop-inprocess  Client(server): mcp's in-process direct dispatch (no transport, no JSON-RPC framing)
  chat-loop-stdio      the server is a child process over stdio (server.py): only the client process's spans are
                       in the fixture; the truth comes from the child
"""

import asyncio
import json
import os
import socket
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from harness import Scenario  # noqa: E402

LIBRARIES = ["mcp", "openai", "openinference-instrumentation-mcp", "openinference-instrumentation-openai",
             "openinference-instrumentation", "openinference-semantic-conventions", "opentelemetry-api",
             "opentelemetry-sdk"]


async def mcp_chat_loop(openai_client, mcp_client, max_turns=8):
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                               "parameters": t.input_schema}}
             for t in (await mcp_client.list_tools()).tools]
    messages = [{"role": "user", "content": harness.USER_PROMPT}]
    for _ in range(max_turns):
        msg = (await openai_client.chat.completions.create(model=harness.MODEL, messages=messages,
                                                           tools=tools)).choices[0].message
        if not msg.tool_calls:
            return msg.content
        messages.append(msg.model_dump(exclude_none=True))
        for tc in msg.tool_calls:
            result = await mcp_client.call_tool(tc.function.name, json.loads(tc.function.arguments))
            text = "\n".join(c.text for c in result.content if c.type == "text")
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": text})
    raise RuntimeError("agent loop did not finish")


def serve_http(server):
    """Serve `server` over streamable HTTP on a loopback port in a daemon thread; returns (url, uvicorn server)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning"))
    threading.Thread(target=lambda: asyncio.run(web.serve(sockets=[sock])), daemon=True).start()
    while not web.started:
        threading.Event().wait(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", web


def run(ctx, transport):
    from openinference.instrumentation.mcp import MCPInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    MCPInstrumentor().instrument(tracer_provider=ctx.tracer_provider)  # before mcp is imported
    OpenAIInstrumentor().instrument(tracer_provider=ctx.tracer_provider)
    from mcp import Client, StdioServerParameters
    from openai import AsyncOpenAI
    from server import build

    web = truth_out = None
    if transport == "http":
        target, web = serve_http(build(ctx.tools()))
    elif transport == "inprocess":
        target = build(ctx.tools())
    else:
        truth_out = Path(tempfile.mkdtemp()) / "truth.json"
        target = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).parent / "server.py")],
                                       env={**os.environ, "MCP_TRUTH_OUT": str(truth_out)})

    async def go():
        with ctx.tracer_provider.get_tracer("user-app").start_as_current_span("handle-request"):
            async with Client(target) as mcp_client:
                out = await mcp_chat_loop(AsyncOpenAI(base_url=ctx.base_url, api_key="stub"), mcp_client)
        assert out == "Done.", out

    asyncio.run(go())
    if web:
        web.should_exit = True
    if truth_out:  # the calls were recorded in the child process
        ctx.truth.calls.extend(json.loads(truth_out.read_text()))


NOTES = ("User's own async loop over Chat Completions inside a plain 'handle-request' span; tools called through "
         "an MCP client; the text sent back for the failure is MCP's error text (isError: true). ")

harness.main("openinference-mcp", LIBRARIES, [
    Scenario("chat-loop-http", lambda ctx: run(ctx, "http"), api="chat_completions",
             notes=NOTES + "Streamable HTTP to a server in the same process (uvicorn thread): the server's SERVER "
                           "spans join the client's trace through the _meta trace context."),
    Scenario("chat-loop-inprocess", lambda ctx: run(ctx, "inprocess"), api="chat_completions",
             notes=NOTES + "Client(MCPServer) in-process direct dispatch."),
    Scenario("chat-loop-stdio", lambda ctx: run(ctx, "stdio"), api="chat_completions",
             notes=NOTES + "stdio child process: the server's spans stay in the child (not in the fixture); the "
                           "tool calls' trace is the client's, propagated through _meta."),
])
