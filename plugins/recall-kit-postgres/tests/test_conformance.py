"""pg-fts passes recall-kit's retriever conformance suite (recall_kit.testing), on a real server."""

import pytest
from recall_kit_postgres import PostgresFTS

from recall_kit.plugin import build_options
from recall_kit.testing import RetrieverConformance


class TestPgFtsConformance(RetrieverConformance):
    retriever_factory = None  # set from the throwaway server's DSN below

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _server(cls, pg_dsn):
        options = build_options("pg-fts", PostgresFTS.Options, {"dsn": pg_dsn, "allow_write": True})
        cls.retriever_factory = staticmethod(lambda: PostgresFTS(options))


class TestPgVectorConformance(RetrieverConformance):
    retriever_factory = None
    # A query encoded alone or in a batch agrees to float32 precision, not to the last bit (as dense).
    score_rel_tolerance = 1e-4

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _server(cls, pg_dsn):
        from recall_kit_postgres.vector import PgVector

        options = build_options("pgvector", PgVector.Options, {"dsn": pg_dsn, "allow_write": True})
        cls.retriever_factory = staticmethod(lambda: PgVector(options))


class TestPgHybridConformance(RetrieverConformance):
    retriever_factory = None
    score_rel_tolerance = 1e-4

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _server(cls, pg_dsn):
        from recall_kit_postgres.hybrid import PgHybrid

        options = build_options("pg-hybrid", PgHybrid.Options, {"dsn": pg_dsn, "allow_write": True})
        cls.retriever_factory = staticmethod(lambda: PgHybrid(options))
