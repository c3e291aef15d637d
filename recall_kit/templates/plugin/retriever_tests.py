"""The `my-plugin` retriever: registration, a ranking worked out by hand, a real run."""

from recall_kit import load_dataset, run_benchmark
from recall_kit.testing import registries

import recall_kit_my_plugin
from recall_kit_my_plugin import MyPluginRetriever


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin(recall_kit_my_plugin)
    assert registries()["retrievers"].get("my-plugin").obj is MyPluginRetriever


def test_ranks_by_the_share_of_query_words(recall_kit_corpus):
    retriever = MyPluginRetriever()
    retriever.build_index(recall_kit_corpus)
    hits = retriever.search("rotate the Driftwood API keys", 3)
    # Memory 4 holds all five words; memory 5 holds "driftwood" and "the": 2 of 5.
    assert [hit.id for hit in hits[:2]] == ["4", "5"]
    assert [hit.score for hit in hits[:2]] == [1.0, 0.4]


def test_min_shared_option(recall_kit_corpus):
    retriever = MyPluginRetriever(MyPluginRetriever.Options(min_shared=3))
    retriever.build_index(recall_kit_corpus)
    assert [hit.id for hit in retriever.search("rotate the Driftwood API keys", 10)] == ["4"]


def test_a_real_run(recall_kit_plugin, recall_kit_dataset):
    recall_kit_plugin(recall_kit_my_plugin)
    result = run_benchmark("my-plugin", load_dataset(recall_kit_dataset), k=5,
                           metrics=["mrr"], latency_sample=0)
    queries = {query.query_id: query for query in result.queries}
    assert queries["exact_keys"].ranking[0] == "4"
    assert queries["exact_keys"].metrics["mrr"] == 1.0
