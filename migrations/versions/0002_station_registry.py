"""station registry

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import db.models

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('stations',
    sa.Column('station_id', sa.String(length=64), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('added_at', db.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('added_by', sa.String(length=120), nullable=True),
    sa.Column('note', sa.String(length=200), nullable=True),
    sa.PrimaryKeyConstraint('station_id', name=op.f('pk_stations'))
    )


def downgrade() -> None:
    op.drop_table('stations')
