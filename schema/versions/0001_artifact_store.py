"""Artifact store: projects, blobs, artifacts and the store lock row.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("root", sa.Text(), nullable=False, unique=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("identity_sha256", sa.String(64), nullable=True),
        sa.Column("stat_signature", sa.Text(), nullable=True),
    )
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("block_size", sa.Integer(), nullable=False),
        sa.Column("block_digests", sa.LargeBinary(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "artifacts",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("principal", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("launch_id", sa.String(32), nullable=True),
        sa.Column("media_type", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), sa.ForeignKey("blobs.sha256"), nullable=False),
        sa.Column("frames", sa.Integer(), nullable=True),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("export_id", sa.String(32), nullable=True),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("expires_us", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_artifacts_expires", "artifacts", ["expires_us"])
    op.create_index("ix_artifacts_blob", "artifacts", ["sha256"])
    op.create_index(
        "ix_artifacts_binding",
        "artifacts",
        ["principal", "session_id", "project_id", "created_us"],
    )
    op.create_index("ix_artifacts_export", "artifacts", ["export_id"])
    lock = op.create_table(
        "store_lock",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("writes", sa.BigInteger(), nullable=False),
    )
    op.bulk_insert(lock, [{"id": 1, "writes": 0}])


def downgrade() -> None:
    op.drop_table("store_lock")
    op.drop_index("ix_artifacts_export", "artifacts")
    op.drop_index("ix_artifacts_binding", "artifacts")
    op.drop_index("ix_artifacts_blob", "artifacts")
    op.drop_index("ix_artifacts_expires", "artifacts")
    op.drop_table("artifacts")
    op.drop_table("blobs")
    op.drop_table("projects")
