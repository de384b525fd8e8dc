"""A stand-in for ``codex mcp-server`` built with the MCP Python SDK's server, for the
MCP protocol tests (the pinned Codex build has no ``mcp-server``; see docs/serve.md).

Run as ``python mcp_double.py MODE``: ``full`` lists ``codex`` and ``codex-reply`` with
the input and output schemas of ``codex mcp-server`` and sends ``codex/event``
notifications while a call runs; ``no-reply`` lists only ``codex``.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from pydantic import BaseModel

MODE = sys.argv[1] if len(sys.argv) > 1 else "full"
OUTPUT = {
    "type": "object",
    "properties": {"threadId": {"type": "string"}, "content": {"type": "string"}},
    "required": ["threadId", "content"],
}
TOOLS = [
    types.Tool(
        name="codex",
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string"},
                "cwd": {"type": "string"},
                "approval-policy": {"type": "string"},
                "sandbox": {"type": "string"},
                "model": {"type": "string"},
            },
            "required": ["prompt"],
        },
        output_schema=OUTPUT,
    ),
    types.Tool(
        name="codex-reply",
        input_schema={
            "type": "object",
            "properties": {"threadId": {"type": "string"}, "prompt": {"type": "string"}},
            "required": ["prompt"],
        },
        output_schema=OUTPUT,
    ),
]
THREADS: dict[str, list[str]] = {}


class CodexEvent(BaseModel):
    """A vendor notification: what the SDK's session sends is its method and params."""

    method: str = "codex/event"
    params: dict[str, Any]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    del ctx, params
    return types.ListToolsResult(tools=TOOLS if MODE == "full" else TOOLS[:1])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    prompt = str(arguments.get("prompt"))
    if params.name == "codex":
        thread = f"thr-{uuid.uuid4().hex[:8]}"
        THREADS[thread] = []
        first = {"type": "session_configured", "session_id": thread, "model": "double-model"}
        await ctx.session.send_notification(CodexEvent(params={"id": "0", "msg": first}))
    else:
        thread = str(arguments.get("threadId"))
        if thread not in THREADS:
            text = f"unknown thread {thread}"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
    THREADS[thread].append(prompt)
    begin = {"type": "exec_command_begin", "call_id": "c1", "command": ["echo", "hi"]}
    end = {"type": "exec_command_end", "call_id": "c1", "exit_code": 0, "aggregated_output": "hi\n"}
    for message in (begin, end):
        await ctx.session.send_notification(CodexEvent(params={"id": "1", "msg": message}))
    reply = f"turn {len(THREADS[thread])}: {prompt}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=reply)],
        structured_content={"threadId": thread, "content": reply},
    )


async def main() -> None:
    server = Server(
        "codex-mcp-double", version="1", on_list_tools=list_tools, on_call_tool=call_tool
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
