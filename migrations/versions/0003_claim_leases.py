"""claim leases: windows.lease_until, releases.publish_lease_until

A closing window and a publishing claim are leases renewed by their holder (a heartbeat): they
expire only when the holder stops renewing them.

Revision ID: 0003
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import db.models

revision = '0003'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lease_until', db.models.UTCDateTime(timezone=True), nullable=True))
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.add_column(sa.Column('publish_lease_until', db.models.UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.drop_column('publish_lease_until')
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.drop_column('lease_until')
