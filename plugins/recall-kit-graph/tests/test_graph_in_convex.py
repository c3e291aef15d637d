"""The graph leg in convex fusion: at the weight recommended for LoCoMo (0.25 beside bm25 and dense
at 1), min-max convex fusion cannot bar it structurally from the fused top k, and `diagnose` says
so (no warning); with rank normalisation the same weights bar it, and `diagnose` warns."""

from __future__ import annotations

import pytest

from recall_kit.plugin import Corpus, FusionRequest, Hit, Memory, Query

convex = pytest.importorskip("recall_kit_fusion.convex")

WEIGHTS = {"bm25": 1.0, "dense": 1.0, "graph": 0.25}


def test_diagnose_minmax_does_not_bar_the_graph_leg() -> None:
    fusion = convex.ConvexFusion(convex.ConvexFusion.Options(norm="minmax"))
    assert fusion.diagnose(WEIGHTS, 10) == []
    assert fusion.diagnose(WEIGHTS, 5) == []


def test_diagnose_rank_bars_a_light_graph_leg() -> None:
    # rank: bm25's 10th of 100 hits is worth 1 x (1 - 9/100) = 0.91 > 0.25, the most a document
    # only the graph found can score.
    fusion = convex.ConvexFusion(convex.ConvexFusion.Options(norm="rank"))
    warnings = fusion.diagnose(WEIGHTS, 10)
    assert len(warnings) == 1
    assert "leg 'graph' (weight 0.25) cannot place a document" in warnings[0]
    assert "0.910000" in warnings[0]


def test_a_document_only_the_graph_found_reaches_the_fused_top_k() -> None:
    # min-max by hand: bm25 a 1, b 0.5, c 0; dense d 1, e 0.5, f 0; graph g 1 (weight 0.25).
    # Fused: a 1, d 1, b 0.5, e 0.5, g 0.25, c 0, f 0: g, found by the graph alone, is 5th.
    def leg(*pairs: tuple[str, float]) -> list[Hit]:
        return [Hit(doc, score) for doc, score in pairs]

    legs = {
        "bm25": leg(("a", 3.0), ("b", 2.0), ("c", 1.0)),
        "dense": leg(("d", 0.9), ("e", 0.6), ("f", 0.3)),
        "graph": leg(("g", 0.02)),
    }
    corpus = Corpus([Memory(doc, doc) for doc in "abcdefg"])
    request = FusionRequest(query=Query("q", "text"), legs=legs, weights=WEIGHTS, ranking=None,
                            corpus=corpus, k=5)
    fused = convex.ConvexFusion(convex.ConvexFusion.Options(norm="minmax")).fuse(request)
    assert [hit.id for hit in fused] == ["d", "a", "e", "b", "g"]
    assert fused[-1].score == pytest.approx(0.25)
