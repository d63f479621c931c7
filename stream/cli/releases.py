"""``anonstream releases republish|export`` and why ``releases verify`` found a release missing.

Both work from the ledger (the database holds every stored release: manifest, columns, rows), found
the one way every command finds it (``--database``, ``ANONSTREAM_DATABASE_URL``, else the instance
under ``ANONSTREAM_HOME``); ``republish`` also needs the broker.
"""

from __future__ import annotations

import argparse
from typing import Any

from core.errors import InputDataError


def missing_reason(svc: Any, release_id: str, res: dict[str, Any]) -> str | None:
    """Why a release's records are missing from the topic, in words an operator can act on."""
    found, expected = res.get("records_found", 0), res.get("records_expected", 0)
    if found >= expected:
        return None
    d = svc.release(release_id) or {}
    fix = f"`anonstream releases republish {release_id}` publishes it again from the ledger"
    if d.get("state") != "published":
        return (f"the release is {d.get('state')!r} in the ledger, not published yet: a running worker publishes "
                f"it (or {fix})")
    if found == 0:
        return (f"it was published at {d.get('published_at')}, but the broker no longer holds it: the broker was "
                f"restarted without its data (the embedded broker keeps topics in memory) or the topic's retention "
                f"expired; {fix}")
    return f"only {found} of {expected} records remain on the topic (retention or data loss); {fix}"


def cmd_republish(args: argparse.Namespace) -> int:
    from db import Database, ReleaseRepository
    from stream.config.settings import load_settings
    from stream.ops.locate import check_broker, check_database, resolve
    from stream.ops.republish import publish_from_ledger

    settings = resolve(load_settings(database_url=args.database, broker_url=args.broker), need_broker=True,
                       need_database=True)
    check_database(settings.db_url())
    check_broker(settings)
    repo = ReleaseRepository(Database(settings.db_url()))
    ids = list(dict.fromkeys(args.ids))
    for rid in ids:
        if _state(repo, rid) is None:
            raise InputDataError(f"no release {rid!r} in the ledger", reason="console")
    from db.feeds import feed_of_release
    from stream.config.feeds import feeds

    by_name = {f.feed: f for f in feeds(settings)}
    with repo.db.read() as s:
        owner = {rid: feed_of_release(s, rid) or "default" for rid in ids}
    for rid in ids:  # each release goes back to its own feed's topics
        if owner[rid] not in by_name:
            raise InputDataError(f"release {rid!r} belongs to feed {owner[rid]!r}, which these settings do not "
                                 "declare (set ANONSTREAM_PIPELINES to the deployment's pipelines file)",
                                 reason="console")
    for rid in ids:
        fs = by_name[owner[rid]]
        publish_from_ledger(fs, repo, [rid])
        print(f"release {rid}: re-published to {fs.topic_anonymized} and {fs.topic_releases}")
    return 0


def _state(repo: Any, release_id: str) -> str | None:
    from db.models import Release

    with repo.db.read() as s:
        rel = s.get(Release, release_id)
        return None if rel is None else rel.state


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from db import Database, ReleaseRepository
    from stream.config.settings import load_settings
    from stream.ops.locate import check_database, resolve
    from stream.ops.republish import export

    settings = resolve(load_settings(database_url=args.database), need_database=True)
    check_database(settings.db_url())
    repo = ReleaseRepository(Database(settings.db_url()))
    if _state(repo, args.id) is None:
        raise InputDataError(f"no release {args.id!r} in the ledger", reason="console")
    n = export(repo, args.id, Path(args.out))
    print(f"release {args.id}: {n} records and its manifest written to {args.out} (JSON lines, manifest last)")
    return 0
