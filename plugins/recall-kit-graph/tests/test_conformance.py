"""The graph retriever passes recall-kit's retriever conformance suite (recall_kit.testing)."""

import pytest
import recall_kit_graph
from recall_kit_graph import GraphRetriever

from recall_kit.testing import RetrieverConformance, registered_plugin


@pytest.fixture(scope="module", autouse=True)
def graph_plugin():
    """The graph retriever looks its extractors up through the plugin's own hook."""
    with registered_plugin(recall_kit_graph) as plugin:
        yield plugin


class TestGraphSpreadConformance(RetrieverConformance):
    retriever_factory = GraphRetriever


class TestGraphPageRankConformance(RetrieverConformance):
    retriever_factory = staticmethod(lambda: GraphRetriever(GraphRetriever.Options(method="ppr")))
