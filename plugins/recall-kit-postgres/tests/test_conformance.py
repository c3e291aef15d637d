"""pg-fts passes recall-kit's retriever conformance suite (recall_kit.testing), on a real server."""

import pytest
from recall_kit_postgres import PostgresFTS

from recall_kit.options import build_options
from recall_kit.testing import RetrieverConformance


class TestPgFtsConformance(RetrieverConformance):
    retriever_factory = None  # set from the throwaway server's DSN below

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _server(cls, pg_dsn):
        options = build_options("pg-fts", PostgresFTS.Options, {"dsn": pg_dsn, "allow_write": True})
        cls.retriever_factory = staticmethod(lambda: PostgresFTS(options))
