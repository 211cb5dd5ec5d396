"""An export by platform (the engine's default options) rather than by a preset of the project.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("exports", sa.Column("platform", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("exports") as batch:
        batch.drop_column("platform")
