"""The store's database: an engine from a URL, its transactions, its migrations.

What differs between SQLite (the embedded default) and PostgreSQL (many servers on one
store) lives in ``store/sqlite.py`` and ``store/postgres.py``; everything else is the same
SQLAlchemy code on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import CursorResult, Engine, Result, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, InterfaceError, OperationalError
from sqlalchemy.orm import Session

import godot_mcp.schema
from godot_mcp.errors import ConfigError, DatabaseBusy, DatabaseUnavailable, StorageError
from godot_mcp.store import postgres, sqlite
from godot_mcp.store.models import StoreLock

_DRIVERS = {"sqlite": ("pysqlite",), "postgresql": ("psycopg",)}


def backend(url: str) -> str:
    """``sqlite`` or ``postgresql``; any other database, driver or a malformed URL is a
    ConfigError (one line, naming no password)."""
    try:
        parsed = make_url(url)
        name, driver = parsed.get_backend_name(), parsed.get_driver_name()
        _ = parsed.port  # a port that is not a number fails here
    except (ArgumentError, ValueError):
        raise ConfigError("the database URL is not a URL a database is named by") from None
    if name not in _DRIVERS:
        raise ConfigError(f"the database must be SQLite or PostgreSQL, not {name!r}")
    if driver not in _DRIVERS[name]:  # postgresql:// alone means psycopg2, not installed
        drivers = ", ".join(f"{name}+{d}" for d in _DRIVERS[name])
        raise ConfigError(f"the database driver must be {drivers}, not {driver!r}")
    if name == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise ConfigError("an SQLite database must be a file (not in memory)")
    return name


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite URL, else None."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    return Path(parsed.database)


def make_engine(url: str) -> Engine:
    """The engine of the store's database at ``url``."""
    if backend(url) == "sqlite":
        return sqlite.make_engine(url)
    return postgres.make_engine(url)


@contextmanager
def database_errors() -> Iterator[None]:
    """Turn the database's own failures into the error tree, by what they mean:

    * a database server that cannot be reached (no connection, a lost one, one shut down)
      is DatabaseUnavailable: the server keeps serving and recovers when it is back;
    * one that answered but could not do it now (a deadlock, a serialization conflict, a
      statement or lock timeout, too many connections; SQLite's file locked past its busy
      timeout) is DatabaseBusy: try again;
    * anything else it refused (SQLite on a full disk, an I/O error, a constraint) is
      StorageError.
    """
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        reason = str(getattr(exc, "orig", None) or "the database failed").splitlines()[0]
        kind = _kind(exc)
        if kind == "lost":
            raise DatabaseUnavailable(
                "the store's database cannot be reached", reason=reason[:200]
            ) from None
        if kind is not None:
            raise DatabaseBusy(f"the store's database is busy ({kind}); try again") from None
        raise StorageError(f"the store's database refused the operation: {reason[:200]}") from None


# SQLSTATEs (PostgreSQL, appendix A) of a connection lost or refused, and of work the server
# could not do now but may later.
_LOST = ("57P01", "57P02", "57P03")  # admin or crash shutdown, cannot connect now
_BUSY = {
    "40001": "a serialization conflict",
    "40P01": "a deadlock",
    "55P03": "a lock it could not take",
    "57014": "a statement timeout",
    "53300": "too many connections",
}


def _kind(exc: Exception) -> str | None:
    """``lost``, what kept a server busy, or None for a refusal."""
    if getattr(exc, "connection_invalidated", False):
        return "lost"
    orig = getattr(exc, "orig", None)
    if type(orig).__module__.startswith("psycopg"):
        state = getattr(orig, "sqlstate", None)
        if state is None or state.startswith("08") or state in _LOST:
            return "lost"  # no SQLSTATE: the connection itself failed
        return _BUSY.get(state, "a transaction conflict" if state.startswith("40") else None)
    if "database is locked" in str(orig) or "database is busy" in str(orig):
        return "its file is locked by another writer"
    return None


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A read transaction (a consistent snapshot)."""
    with database_errors(), Session(engine, expire_on_commit=False) as s, s.begin():
        yield s


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A write transaction that holds the store's write lock from its first statement.

    ``BEGIN IMMEDIATE`` on SQLite; the ``store_lock`` row is also taken
    ``FOR UPDATE`` so the same code serializes budget checks on PostgreSQL.
    """
    immediate = engine.execution_options(sqlite_begin="IMMEDIATE")
    with database_errors(), Session(immediate, expire_on_commit=False) as s, s.begin():
        s.execute(select(StoreLock.id).where(StoreLock.id == 1).with_for_update())
        s.execute(update(StoreLock).where(StoreLock.id == 1).values(writes=StoreLock.writes + 1))
        yield s


def alembic_config() -> Config:
    """Alembic configuration pointing at the shipped ``schema/`` environment."""
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(godot_mcp.schema.__file__).parent))
    return cfg


def upgrade_to_head(engine: Engine) -> None:
    """Create or upgrade the schema; concurrent callers serialize (SQLite's write lock,
    PostgreSQL's advisory lock)."""
    cfg = alembic_config()
    immediate = engine.execution_options(sqlite_begin="IMMEDIATE")
    with database_errors(), immediate.begin() as conn:
        if engine.dialect.name == "postgresql":
            postgres.lock_migrations(conn)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def rowcount(result: Result[Any]) -> int:
    """Rows a DELETE or UPDATE touched."""
    return int(cast(CursorResult[Any], result).rowcount or 0)
