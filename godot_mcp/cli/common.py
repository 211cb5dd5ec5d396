"""Small helpers shared by the two command-line entry points."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from sqlalchemy.exc import SQLAlchemyError

from godot_mcp.config import Settings
from godot_mcp.errors import (
    BlobStoreRefused,
    BlobStoreUnavailable,
    ConfigError,
    DatabaseUnavailable,
    GodotMcpError,
    InvalidArgument,
    StorageError,
)
from godot_mcp.store.failures import os_error
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import StoreLayout


def fail(prog: str, message: str, status: int = 2) -> int:
    """Print a one-line error on stderr and return the exit status."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status


def print_report(report: Mapping[str, object], as_json: bool) -> None:
    """Print a flat report as JSON or as aligned ``key: value`` lines."""
    if as_json:
        print(json.dumps(report, sort_keys=True))
        return
    flat: dict[str, object] = {}
    for key, value in report.items():
        if isinstance(value, Mapping):
            for sub, v in value.items():
                flat[f"{key}.{sub}"] = v
        else:
            flat[key] = value
    width = max((len(k) for k in flat), default=0)
    for key, value in flat.items():
        print(f"{key.ljust(width)}  {value}")


def store_exists(settings: Settings) -> bool:
    """Whether there is a store to look at: a shared database always is; the embedded one
    once its SQLite file exists (read-only subcommands never create it)."""
    if settings.database_url is not None:
        return True  # a shared bucket comes with the database that names its bytes
    return StoreLayout(settings.state_dir).db_path.is_file()


def open_store(settings: Settings, bytes_too: bool = True) -> ArtifactStore:
    """Open (and migrate) the store; a database that cannot be reached is a ConfigError.

    ``bytes_too=False`` for subcommands that never touch artifact bytes (tokens, status):
    they neither claim a shared database for this state dir's blobs nor need them.
    """
    try:
        return ArtifactStore(
            settings.state_dir,
            settings.limits,
            database_url=settings.database_url,
            claim=bytes_too,
            blob_store_url=settings.blob_store_url,
        )
    except (StorageError, DatabaseUnavailable, BlobStoreUnavailable) as exc:
        raise ConfigError(opening_failed(exc)) from None


def opening_failed(exc: StorageError | DatabaseUnavailable | BlobStoreUnavailable) -> str:
    """The one line of a store that could not be opened: its database, or its blob store."""
    part = "blob store" if isinstance(exc, BlobStoreUnavailable | BlobStoreRefused) else "database"
    return f"cannot open the store's {part}: {exc}"  # with the driver's reason: the operator's


def failed(prog: str, exc: BaseException, opening: bool = False) -> int:
    """The exit of a command that ended on ``exc``: the CLI's one boundary, by the error tree
    and the table of foreign failures (``store/failures.py``). Status 2 for what the
    operator must change (an option; with ``opening``, a store that could not be opened
    while the server started), 1 for the rest."""
    if isinstance(exc, ConfigError | InvalidArgument):
        return fail(prog, exc.message)
    if isinstance(exc, StorageError | DatabaseUnavailable | BlobStoreUnavailable):
        return fail(prog, opening_failed(exc)) if opening else fail(prog, exc.message, status=1)
    if isinstance(exc, GodotMcpError):
        return fail(prog, exc.message, status=1)
    if isinstance(exc, SQLAlchemyError):
        return fail(prog, database_reason(exc), status=1)
    if isinstance(exc, OSError):
        return fail(prog, os_error("cannot use the state dir", exc).message, status=1)
    raise exc


def database_reason(exc: BaseException) -> str:
    """One line saying why the database could not be used (its driver's own first line)."""
    orig = getattr(exc, "orig", None)
    first = str(orig or "").strip().splitlines()
    reason = first[0][:200] if first else type(exc).__name__
    return f"the store database cannot be used: {reason}"
