"""The fts5 retriever passes recall-kit's retriever conformance suite (recall_kit.testing)."""

from recall_kit_fts5 import FTS5Retriever

from recall_kit.testing import RetrieverConformance


class TestFTS5Conformance(RetrieverConformance):
    retriever_factory = FTS5Retriever
