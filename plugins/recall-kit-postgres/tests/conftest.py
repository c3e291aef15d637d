"""A throwaway PostgreSQL server from pgserver's binaries (no system PostgreSQL needed), started by
the tests through the plugin's own EmbeddedServer; it plays the external server that a DSN names."""

from __future__ import annotations

import pytest
from recall_kit_postgres.server import EmbeddedServer


@pytest.fixture(scope="session")
def pg_server():
    server = EmbeddedServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_dsn(pg_server):
    """The DSN of a running server, as a user would pass it with -o pg-fts.dsn=..."""
    return pg_server.dsn
