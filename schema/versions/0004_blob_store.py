"""Which blob store a database belongs to.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blob_store",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("blob_store")
