from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from godot_mcp.store.models import Base
from godot_mcp.store.store import ArtifactStore


def test_the_models_and_the_migrations_agree(tmp_path, database) -> None:
    store = ArtifactStore(tmp_path / "state", database_url=database)
    assert store.engine.dialect.name == ("postgresql" if database else "sqlite")
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []
    store.close()


def test_opening_twice_upgrades_once_and_keeps_data(tmp_path, database) -> None:
    a = ArtifactStore(tmp_path / "state", database_url=database)
    b = ArtifactStore(tmp_path / "state", database_url=database)
    tables = set(inspect(b.engine).get_table_names())
    assert {"artifacts", "blobs", "projects", "store_lock", "alembic_version"} <= tables
    a.close()
    b.close()
