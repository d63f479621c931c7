"""deployment id: one row holding the deployment's id, which enters every release id and manifest

Generated once by the first worker on the ledger (:mod:`db.deployment`), so two deployments sharing a
signing key never give one release id to different content.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import db.models

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'deployment',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('deployment_id', sa.String(length=32), nullable=False),
        sa.Column('created_at', db.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_deployment')),
    )


def downgrade() -> None:
    op.drop_table('deployment')
