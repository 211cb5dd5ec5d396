"""The SQLite-specific part of the store: engine, pragmas, transactions, migrations.

pysqlite's legacy transaction handling emits no BEGIN for reads and breaks
SAVEPOINT, so the driver is put in autocommit (``isolation_level = None``) and a
``begin`` hook emits ``BEGIN`` or, for writes that check the budget,
``BEGIN IMMEDIATE``: in WAL a deferred transaction that reads then writes would
fail with SQLITE_BUSY instead of waiting for the lock.

``synchronous=NORMAL`` in WAL mode survives a killed process; a power cut may
lose the last commits, which only ever loses rows whose bytes were already
fsynced (an orphan file for reconcile), never bytes behind a row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from alembic import command
from alembic.config import Config
from sqlalchemy import CursorResult, Engine, Result, create_engine, event, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

import godot_mcp.schema
from godot_mcp.errors import StorageError
from godot_mcp.store.models import StoreLock

BUSY_TIMEOUT_S = 30.0


def make_engine(db_path: Path) -> Engine:
    """An engine on the store's SQLite file with WAL and a busy timeout."""
    engine = create_engine(
        f"sqlite+pysqlite:///{db_path}",
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S},
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: sqlite3.Connection, _rec: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "")
        conn.exec_driver_sql(f"BEGIN {mode}".strip())

    return engine


@contextmanager
def database_errors() -> Iterator[None]:
    """Turn the database's own failures (a full disk, an I/O error) into StorageError."""
    try:
        yield
    except OperationalError as exc:
        reason = str(getattr(exc, "orig", None) or "the database failed").splitlines()[0]
        raise StorageError(f"the store's database refused the operation: {reason[:200]}") from None


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
    """Create or upgrade the schema; concurrent callers serialize on the write lock."""
    cfg = alembic_config()
    immediate = engine.execution_options(sqlite_begin="IMMEDIATE")
    with immediate.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def rowcount(result: Result[Any]) -> int:
    """Rows a DELETE or UPDATE touched."""
    return int(cast(CursorResult[Any], result).rowcount or 0)
