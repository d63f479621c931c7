"""dp budget: the privacy-budget blocks and their spends

``dp_blocks`` keeps each budget block's lifetime cap and what has been spent on it (ρ of zCDP);
``dp_spends`` one row per block and charge, with the release it paid for (:mod:`db.budget`).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import db.models

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'dp_blocks',
        sa.Column('block', sa.String(length=200), nullable=False),
        sa.Column('cap_rho', sa.Float(), nullable=False),
        sa.Column('spent_rho', sa.Float(), nullable=False),
        sa.Column('updated_at', db.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('block', name=op.f('pk_dp_blocks')),
    )
    op.create_table(
        'dp_spends',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
        sa.Column('block', sa.String(length=200), nullable=False),
        sa.Column('rho', sa.Float(), nullable=False),
        sa.Column('purpose', sa.String(length=200), nullable=False),
        sa.Column('release_id', sa.String(length=64), nullable=True),
        sa.Column('at', db.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_dp_spends')),
    )
    with op.batch_alter_table('dp_spends', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dp_spends_block'), ['block'], unique=False)
        batch_op.create_index(batch_op.f('ix_dp_spends_release_id'), ['release_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('dp_spends', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dp_spends_release_id'))
        batch_op.drop_index(batch_op.f('ix_dp_spends_block'))
    op.drop_table('dp_spends')
    op.drop_table('dp_blocks')
