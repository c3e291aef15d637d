"""The example retriever passes recall-kit's retriever conformance suite."""

from recall_kit_example import TfidfRetriever

from recall_kit.testing import RetrieverConformance


class TestTfidfConformance(RetrieverConformance):
    retriever_factory = TfidfRetriever


class TestTfidfRawTfConformance(RetrieverConformance):
    retriever_factory = staticmethod(
        lambda: TfidfRetriever(TfidfRetriever.Options(sublinear_tf=False, fields="content"))
    )
