"""castle states: each window key's CASTLE stream state in delay mode (ANONSTREAM_DELAY__ENABLED)

Written in the same transaction as the release of the reports that left the stream, and read back when a
worker takes the key over (:mod:`db.castle_states`), so a killed worker loses and duplicates nothing.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import db.models

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'castle_states',
        sa.Column('key', sa.String(length=120), nullable=False),
        sa.Column('feed', sa.String(length=32), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('state', sa.JSON(), nullable=False),
        sa.Column('updated_at', db.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('key', name=op.f('pk_castle_states')),
    )


def downgrade() -> None:
    op.drop_table('castle_states')
