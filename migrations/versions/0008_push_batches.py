"""push batches: the batches table and windows.flush

A push tells the worker where its batch begins and ends (marker messages on the reports topic,
``stream/wire/markers.py``); ``batches`` keeps each station's batches as they reached a worker, so a
station's windows close when its batch is complete. ``windows.flush`` is the operator's request to
release a window now, whatever ``min_release_rows`` says (``anonstream windows flush``).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import db.models

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'batches',
        sa.Column('feed', sa.String(length=32), server_default='default', nullable=False),
        sa.Column('station_id', sa.String(length=64), nullable=False),
        sa.Column('batch_id', sa.String(length=64), nullable=False),
        sa.Column('key', sa.String(length=120), nullable=False),
        sa.Column('begun_at', db.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column('ended_at', db.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column('rows', sa.Integer(), nullable=True),
        sa.Column('merged_at', db.models.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('feed', 'station_id', 'batch_id', name=op.f('pk_batches')),
    )
    with op.batch_alter_table('batches', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_batches_key'), ['key'], unique=False)
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.add_column(sa.Column('flush', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.drop_column('flush')
    with op.batch_alter_table('batches', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_batches_key'))
    op.drop_table('batches')
