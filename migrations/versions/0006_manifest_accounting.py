"""manifest accounting: pending_reports.counted_in, watermarks.pending_duplicates/pending_dropped, windows.dropped

A report held back by a release's sample is remembered as counted (its next manifest counts it as
``carried_in``); duplicates that arrive while their key has no open window wait on the key's
watermark row for the key's next release to count them. Reports dropped for a missing value
(``on_missing = "drop"``) are tallied the same way (``windows.dropped``, ``watermarks.pending_dropped``).

Revision ID: 0006
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('pending_reports', schema=None) as batch_op:
        batch_op.add_column(sa.Column('counted_in', sa.String(length=64), nullable=True))
    with op.batch_alter_table('watermarks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pending_duplicates', sa.BigInteger(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('pending_dropped', sa.BigInteger(), server_default='0', nullable=False))
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.add_column(sa.Column('dropped', sa.Integer(), server_default='0', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.drop_column('dropped')
    with op.batch_alter_table('watermarks', schema=None) as batch_op:
        batch_op.drop_column('pending_dropped')
        batch_op.drop_column('pending_duplicates')
    with op.batch_alter_table('pending_reports', schema=None) as batch_op:
        batch_op.drop_column('counted_in')
