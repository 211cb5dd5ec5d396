"""HTTP bearer tokens (hashes only).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("principal", sa.Text(), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_tokens_principal", "tokens", ["principal"])


def downgrade() -> None:
    op.drop_index("ix_tokens_principal", "tokens")
    op.drop_table("tokens")
