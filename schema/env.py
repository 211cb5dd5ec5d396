"""Alembic environment: runs on the connection the store hands in."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from godot_mcp.store.models import Base

target_metadata = Base.metadata
config = context.config


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("set sqlalchemy.url or pass a connection")
    with create_engine(url).begin() as conn:
        _run(conn)
