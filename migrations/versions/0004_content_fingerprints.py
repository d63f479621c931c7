"""content fingerprints: keyed HMAC of a report's content in the pool and the released ledger

Revision ID: 0004
Revises: 0002
Create Date: 2026-11-23 23:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('pending_reports', schema=None) as batch_op:
        batch_op.add_column(sa.Column('content_fp', sa.String(length=64), nullable=True))
    with op.batch_alter_table('released_fingerprints', schema=None) as batch_op:
        batch_op.add_column(sa.Column('content_fp', sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f('ix_released_fingerprints_content_fp'), ['content_fp'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('released_fingerprints', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_released_fingerprints_content_fp'))
        batch_op.drop_column('content_fp')
    with op.batch_alter_table('pending_reports', schema=None) as batch_op:
        batch_op.drop_column('content_fp')
