"""``godot-mcp serve``: the MCP server over stdio or Streamable HTTP.

Every set-up problem is found before anything is created: a one-line error on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
from sqlalchemy.exc import SQLAlchemyError

from godot_mcp.cli.common import fail, failed, open_store
from godot_mcp.config import OneLineParser, Settings, add_common_options, check_project, resolve
from godot_mcp.engine.process.procs import protect_server
from godot_mcp.errors import (
    ConfigError,
    GodotMcpError,
)
from godot_mcp.mcp.spec import Tool
from godot_mcp.store.tokens import count_tokens_readonly, list_tokens
from godot_mcp.store.values import StoreLayout

PROG = "godot-mcp"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``godot-mcp``."""
    parser = OneLineParser(prog=PROG, description="An MCP server for a Godot project.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    serve = sub.add_parser("serve", help="serve MCP for one Godot project")
    serve.add_argument("--project", required=True, metavar="DIR")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", default="8765")
    add_common_options(serve)
    return parser


def _token_count(settings: Settings) -> int:
    """Tokens in the store. The embedded store is read without creating anything (the
    server must refuse before it makes a state dir); a shared database is opened."""
    if settings.database_url is not None:
        store = open_store(settings, bytes_too=False)
        try:
            return len(list_tokens(store.engine))
        finally:
            store.close()
    db = StoreLayout(settings.state_dir).db_path
    return count_tokens_readonly(db) if db.is_file() else 0


def _port(raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 5 or int(raw) > 65535:
        raise ConfigError(f"--port must be 0-65535, got {raw!r}")
    return int(raw)


def _check_listen(host: str, port: int) -> None:
    """The HTTP address must resolve and be free: found now, before anything is created."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise ConfigError(f"--host {host!r} does not resolve to an address") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host} port {port}: {exc.strerror}") from None


async def _run(
    settings: Settings, args: argparse.Namespace, project: Path, extra: Sequence[Tool]
) -> None:
    from godot_mcp.app import open_app

    async with open_app(settings, project, args.transport, extra) as app:
        if args.transport == "stdio":
            from godot_mcp.transports.stdio import serve_stdio

            await serve_stdio(app.server)
        else:
            from godot_mcp.transports.http import HttpOptions, serve_http

            options = HttpOptions(
                idle_seconds=settings.http_session_idle_seconds,
                max_sessions_per_principal=settings.max_http_sessions_per_principal,
            )
            await serve_http(
                app.server,
                app.deps.runtime,
                args.host,
                _port(args.port),
                app.on_session_end,
                options,
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``godot-mcp``: the shipped tools, and only those."""
    return serve_with_tools(argv, ())


def serve_with_tools(argv: Sequence[str] | None, extra_tools: Sequence[Tool]) -> int:
    """``godot-mcp`` with tools added: a seam for the test suite's producer tool
    (``tests/support/serve_test.py``), never reached from an installed command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("GODOT_MCP_LOG_LEVEL", "WARNING").upper(),
        format="godot-mcp: %(levelname)s %(name)s: %(message)s",
    )
    try:
        project = check_project(args.project)
        settings = resolve(args, project=project)
        if args.transport == "http":
            if not args.host:
                raise ConfigError("--host must not be empty")
            _check_listen(args.host, _port(args.port))
            if _token_count(settings) == 0:
                raise ConfigError(
                    "HTTP needs a token: run 'godot-mcp-admin token add PRINCIPAL' first"
                )
    except GodotMcpError as exc:
        return fail(PROG, exc.message)
    # The games of every server of this user run as this user: none may read this one's
    # environment or memory, whether or not it starts games itself (engine/process/procs.py).
    protect_server()
    try:
        anyio.run(_run, settings, args, project, extra_tools)
    except KeyboardInterrupt:
        pass
    except (GodotMcpError, SQLAlchemyError, OSError) as exc:  # found while starting or serving
        return failed(PROG, exc, opening=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
