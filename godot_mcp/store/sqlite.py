"""The SQLite-only part of the store: the engine with its pragmas and its BEGIN.

pysqlite's legacy transaction handling emits no BEGIN for reads and breaks SAVEPOINT, so the
driver is put in autocommit (``isolation_level = None``) and a ``begin`` hook emits ``BEGIN``
or, for writes that check the budget, ``BEGIN IMMEDIATE``: in WAL a deferred transaction
that reads then writes would fail with SQLITE_BUSY instead of waiting for the lock.

``synchronous=NORMAL`` in WAL mode survives a killed process; a power cut may lose the last
commits, which only ever loses rows whose bytes were already fsynced (an orphan file for
reconcile), never bytes behind a row.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event

BUSY_TIMEOUT_S = 30.0


def url_for(db_path: Path) -> str:
    """The URL of the store's SQLite file."""
    return f"sqlite+pysqlite:///{db_path}"


def make_engine(url: str) -> Engine:
    """An engine on an SQLite file with WAL and a busy timeout."""
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S}
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
