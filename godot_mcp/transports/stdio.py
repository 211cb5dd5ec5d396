"""MCP over stdio: stdout carries only protocol messages (logs go to stderr)."""

from __future__ import annotations

from mcp.server import Server
from mcp.server.stdio import stdio_server


async def serve_stdio(server: Server) -> None:
    """Serve until the client closes stdin."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
