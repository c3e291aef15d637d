"""The `my-plugin` metric: registration and values worked out by hand."""

from recall_kit import evaluate
from recall_kit.testing import judge_rankings, registries

import recall_kit_my_plugin
from recall_kit_my_plugin import my_plugin_at_k

QRELS = {"q1": {"a": 1, "c": 2, "z": 1, "b": 0}, "q2": {"y": 1}}
RANKINGS = [["a", "b", "c"], ["x"]]


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin(recall_kit_my_plugin)
    assert registries()["metrics"].get("my-plugin").obj is recall_kit_my_plugin.METRIC


def test_counts_relevant_documents_in_the_top_k():
    data = judge_rankings(["q1", "q2"], RANKINGS, QRELS)
    # q1: top 2 = a (relevant), b (judged 0) -> 1; top 3 adds c (grade 2) -> 2. q2: x -> 0.
    assert my_plugin_at_k(data, 2).tolist() == [1.0, 0.0]
    assert my_plugin_at_k(data, 3).tolist() == [2.0, 0.0]


def test_through_the_host_by_name(recall_kit_plugin):
    recall_kit_plugin(recall_kit_my_plugin)
    run = {"q1": RANKINGS[0], "q2": RANKINGS[1]}
    values = evaluate(QRELS, run, ["my-plugin@3"], per_query=True)
    assert values == {"q1": {"my-plugin@3": 2.0}, "q2": {"my-plugin@3": 0.0}}
