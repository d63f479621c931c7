"""dp policy: the ledger's differential-privacy policy (block scheme, cap, delta, largest epsilon, feeds)

One row (``id = 1``), recorded by the first run that counts with differential privacy and changed only
by ``anonstream budget set-cap`` / ``add-feed`` (:mod:`db.dp_policy`).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import db.models

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'dp_policy',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('block_by', sa.String(length=16), nullable=False),
        sa.Column('cap_epsilon', sa.Float(), nullable=False),
        sa.Column('cap_rho', sa.Float(), nullable=False),
        sa.Column('delta', sa.Float(), nullable=False),
        sa.Column('max_epsilon', sa.Float(), nullable=False),
        sa.Column('feeds', sa.JSON(), nullable=False),
        sa.Column('created_at', db.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('updated_at', db.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_dp_policy')),
    )


def downgrade() -> None:
    op.drop_table('dp_policy')
