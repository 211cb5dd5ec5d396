"""The PostgreSQL-only part of the store: the engine, and the lock migrations take.

psycopg 3 at READ COMMITTED. Budget-checking writes serialize on the ``store_lock`` row
(``SELECT … FOR UPDATE`` in ``db.write_session``), a real row lock here; schema upgrades by
several servers at once serialize on a transaction-scoped advisory lock.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, create_engine, text

MIGRATION_LOCK = 0x60D07  # pg_advisory_xact_lock key of schema upgrades
CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 30_000  # no statement waits longer (a lock held by a stuck server)


def make_engine(url: str) -> Engine:
    """An engine on a PostgreSQL database; connections are checked before use."""
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=5,
        max_overflow=20,
        pool_timeout=30,
        connect_args={
            "connect_timeout": CONNECT_TIMEOUT_S,
            "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        },
    )


def lock_migrations(conn: Connection) -> None:
    """Hold the schema-upgrade lock until ``conn``'s transaction ends."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
