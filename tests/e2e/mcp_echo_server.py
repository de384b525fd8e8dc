"""A tiny stdio MCP server (the MCP Python SDK's MCPServer) for the end-to-end tests: one
tool, ``echo_marker``, answering ``marker: <text>`` and appending ``text`` to the file
named by its first argument, so a test sees that Codex called it."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("agc-e2e-echo")


@server.tool()
def echo_marker(text: str) -> str:
    """Echo the text back with a marker (the end-to-end tests' MCP tool)."""
    if len(sys.argv) > 1:
        with Path(sys.argv[1]).open("a", encoding="utf-8") as calls:
            calls.write(text + "\n")
    return f"marker: {text}"


if __name__ == "__main__":
    server.run("stdio")
