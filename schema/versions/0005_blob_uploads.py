"""Uploads in flight to a shared blob store (S3): leases that keep their objects alive.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blob_uploads",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(32), primary_key=True),
        sa.Column("expires_us", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("blob_uploads")
