"""The dense retriever passes recall-kit's retriever conformance suite (recall_kit.testing).

It uses the default local model, offline; the embedding cache is off so that each fresh instance
really encodes the corpus (the determinism check compares two of them).
"""

from recall_kit_dense import DenseRetriever

from recall_kit.testing import RetrieverConformance


class TestDenseConformance(RetrieverConformance):
    retriever_factory = staticmethod(lambda: DenseRetriever(DenseRetriever.Options(cache=False)))
    # Scores from two encodings of the same text agree to float32 precision, not to the last bit.
    score_rel_tolerance = 1e-4
