"""Stream tests: one real broker (bundled tansu) and one real PostgreSQL per test process."""

from __future__ import annotations

import pytest

from stream.ops.broker import EmbeddedBroker
from stream.testing.services import PostgresServer, broker, postgres


@pytest.fixture(scope="session")
def pg() -> PostgresServer:
    return postgres()


@pytest.fixture(scope="session")
def kafka() -> EmbeddedBroker:
    return broker()
