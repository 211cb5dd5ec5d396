"""The SDK's own baseline: a trivial low-level server answering every read with one blob.

python tools/trivial_server.py stdio SIZE
python tools/trivial_server.py http SIZE PORT
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server import Server


def build(size: int) -> Server:
    blob = base64.b64encode(os.urandom(size)).decode()

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams):
        return types.ReadResourceResult(
            contents=[types.BlobResourceContents(uri=params.uri, mime_type="x/y", blob=blob)]
        )

    return Server("trivial", on_read_resource=on_read_resource)


async def main() -> None:
    mode, size = sys.argv[1], int(sys.argv[2])
    server = build(size)
    if mode == "stdio":
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (r, w):
            await server.run(r, w, server.create_initialization_options())
    else:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        port = int(sys.argv[3])
        await uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        ).serve()


if __name__ == "__main__":
    anyio.run(main)
