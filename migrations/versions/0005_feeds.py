"""feeds: windows.feed, dlq_events.feed, counters.feed and stations.feed (in their keys)

Existing windows, counters and dead-letter events belong to the ``default`` feed. Window keys of
other feeds start with ``<feed>/``, so their pending reports, watermarks, window ids and release
ids are their own; ``windows.feed`` lets each feed's orchestrator claim, reclaim and publish its own
windows only; the counters, dead-letter events and station registry are kept per feed.

Revision ID: 0005
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0006'
branch_labels = None
depends_on = None


def _feed() -> sa.Column:
    return sa.Column('feed', sa.String(length=32), server_default='default', nullable=False)


def _key(table: str, columns: list[str]) -> None:
    """Make ``columns`` the primary key of ``table``."""
    with op.batch_alter_table(table, schema=None) as batch_op:
        batch_op.drop_constraint(f'pk_{table}', type_='primary')
        batch_op.create_primary_key(f'pk_{table}', columns)


def upgrade() -> None:
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.add_column(_feed())
        batch_op.create_index(batch_op.f('ix_windows_feed'), ['feed'], unique=False)
    with op.batch_alter_table('dlq_events', schema=None) as batch_op:
        batch_op.add_column(_feed())
    with op.batch_alter_table('counters', schema=None) as batch_op:
        batch_op.add_column(_feed())
    _key('counters', ['feed', 'station_id', 'kind', 'reason'])
    with op.batch_alter_table('stations', schema=None) as batch_op:
        batch_op.add_column(_feed())
    _key('stations', ['feed', 'station_id'])


def downgrade() -> None:
    # counters of other feeds are folded into the default feed's rows before the key loses the feed
    op.execute("INSERT INTO counters (feed, station_id, kind, reason, count, last_at) "
               "SELECT 'default', station_id, kind, reason, SUM(count), MAX(last_at) FROM counters "
               "WHERE feed <> 'default' AND NOT EXISTS (SELECT 1 FROM counters d WHERE d.feed = 'default' AND "
               "d.station_id = counters.station_id AND d.kind = counters.kind AND d.reason = counters.reason) "
               "GROUP BY station_id, kind, reason")
    op.execute("DELETE FROM counters WHERE feed <> 'default'")
    _key('counters', ['station_id', 'kind', 'reason'])
    # one registry again: every station registered with any feed stays registered
    op.execute("INSERT INTO stations (feed, station_id, source, added_at, added_by, note) "
               "SELECT 'default', station_id, MIN(source), MIN(added_at), MIN(added_by), MIN(note) FROM stations "
               "WHERE feed <> 'default' AND NOT EXISTS (SELECT 1 FROM stations d WHERE d.feed = 'default' AND "
               "d.station_id = stations.station_id) GROUP BY station_id")
    op.execute("DELETE FROM stations WHERE feed <> 'default'")
    _key('stations', ['station_id'])
    with op.batch_alter_table('stations', schema=None) as batch_op:
        batch_op.drop_column('feed')
    with op.batch_alter_table('counters', schema=None) as batch_op:
        batch_op.drop_column('feed')
    with op.batch_alter_table('dlq_events', schema=None) as batch_op:
        batch_op.drop_column('feed')
    with op.batch_alter_table('windows', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_windows_feed'))
        batch_op.drop_column('feed')
