"""Hosts of a shared store and their heartbeats; which host runs an export.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "hosts",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("beat_us", sa.BigInteger(), nullable=False),
    )
    op.add_column("exports", sa.Column("owner_host", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("exports") as batch:
        batch.drop_column("owner_host")
    op.drop_table("hosts")
