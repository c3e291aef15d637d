"""The `my-plugin` retriever passes recall-kit's retriever conformance suite."""

from recall_kit.testing import RetrieverConformance

from recall_kit_my_plugin import MyPluginRetriever


class TestMyPluginConformance(RetrieverConformance):
    retriever_factory = MyPluginRetriever
