"""The bm25 retriever passes recall-kit's retriever conformance suite (recall_kit.testing)."""

from recall_kit_bm25 import BM25Retriever

from recall_kit.testing import RetrieverConformance


class TestBM25Conformance(RetrieverConformance):
    retriever_factory = BM25Retriever
