"""The `my-plugin` fusion: registration and a fused ranking worked out by hand."""

import pytest
from recall_kit import FusionRequest, Hit, Query
from recall_kit.testing import registries

import recall_kit_my_plugin
from recall_kit_my_plugin import MyPluginFusion


def request(corpus, weights, k=2):
    return FusionRequest(
        query=Query("q1", "any text"),
        legs={"a": [Hit("1", 9.0), Hit("2", 5.0)], "b": [Hit("2", 0.9), Hit("3", 0.1)]},
        weights=weights,
        ranking=None,
        corpus=corpus,
        k=k,
    )


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin(recall_kit_my_plugin)
    assert registries()["fusions"].get("my-plugin").obj is MyPluginFusion


def test_borda_points_by_hand(recall_kit_corpus):
    # k = 3, depth = 6: rank 1 gets 6 points, rank 2 gets 5.
    # "1": 6 (a); "2": 5 (a) + 6 (b) = 11; "3": 5 (b).
    fused = MyPluginFusion().fuse(request(recall_kit_corpus, {"a": 1.0, "b": 1.0}, k=3))
    assert fused == [Hit("2", 11.0), Hit("1", 6.0), Hit("3", 5.0)]


def test_weights_and_k(recall_kit_corpus):
    # k = 2, depth = 4; b weighs 0: "2" keeps only a's 3 points and falls behind "1" (4).
    fused = MyPluginFusion().fuse(request(recall_kit_corpus, {"a": 1.0, "b": 0.0}, k=2))
    assert fused == [Hit("1", 4.0), Hit("2", 3.0)]


def test_depth_factor_option():
    assert MyPluginFusion(MyPluginFusion.Options(depth_factor=3)).depth(10) == 30
    with pytest.raises(ValueError):
        MyPluginFusion.Options(depth_factor=0)
