"""arrival cohorts: pending_reports.arrived_in, the window a report was ingested into

The content guard counts a content's occurrences per export: reports of one station that arrived in
one window (co-offenders) are its 1st, 2nd ... occurrence, and a later window adopting them (carried,
held back) leaves their cohort alone. Existing rows take the window they are in now.

Revision ID: 0007
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('pending_reports', schema=None) as batch_op:
        batch_op.add_column(sa.Column('arrived_in', sa.String(length=200), nullable=True))
        batch_op.create_index(batch_op.f('ix_pending_reports_arrived_in'), ['arrived_in'], unique=False)
    op.execute("UPDATE pending_reports SET arrived_in = window_id")


def downgrade() -> None:
    with op.batch_alter_table('pending_reports', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_pending_reports_arrived_in'))
        batch_op.drop_column('arrived_in')
