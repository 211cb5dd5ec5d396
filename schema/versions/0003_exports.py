"""Managed exports and their recovery-evidence bookkeeping.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exports",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id"), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("principal", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("launch_id", sa.String(32), nullable=True),
        sa.Column("preset", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("log_tail", sa.Text(), nullable=True),
        sa.Column("owner_pid", sa.Integer(), nullable=False),
        sa.Column("owner_start", sa.Text(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("ended_us", sa.BigInteger(), nullable=True),
        sa.Column("evidence_bytes", sa.BigInteger(), nullable=True),
        sa.Column("evidence_files", sa.Integer(), nullable=True),
    )
    op.create_index("ix_exports_state", "exports", ["state"])


def downgrade() -> None:
    op.drop_index("ix_exports_state", "exports")
    op.drop_table("exports")
