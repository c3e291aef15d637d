"""Convex fusion: every normalisation by hand, degenerate legs, floors, and the structural check."""

from __future__ import annotations

import math

import pytest
from fusion_test_helpers import as_dict, hits, make_request, ranked_ids
from recall_kit_fusion.convex import ConvexFusion, normalise

LEGS = {"fts5": hits(("a", 3), ("b", 2), ("c", 1)), "dense": hits(("c", 5), ("a", 4), ("d", 1))}
WEIGHTS = {"fts5": 1.0, "dense": 0.5}


def convex(norm: str = "minmax", **options) -> ConvexFusion:
    return ConvexFusion(ConvexFusion.Options(norm=norm, **options))  # type: ignore[arg-type]


def test_minmax_by_hand():
    # fts5: a 1, b 0.5, c 0.  dense: c 1, a (4-1)/(5-1) = 0.75, d 0.  Missing: 0.
    fused = convex().fuse(make_request(LEGS, WEIGHTS))
    assert as_dict(fused) == pytest.approx({"a": 1 + 0.5 * 0.75, "b": 0.5, "c": 0.5 * 1, "d": 0.0})
    assert [hit.id for hit in fused] == ["a", "c", "b", "d"]  # b and c tie at 0.5: larger id first


def test_zscore_by_hand():
    mean_f, std_f = 2.0, math.sqrt(2 / 3)
    mean_d = 10 / 3
    std_d = math.sqrt(((5 - mean_d) ** 2 + (4 - mean_d) ** 2 + (1 - mean_d) ** 2) / 3)
    z_f = {doc: (score - mean_f) / std_f for doc, score in (("a", 3), ("b", 2), ("c", 1))}
    z_d = {doc: (score - mean_d) / std_d for doc, score in (("c", 5), ("a", 4), ("d", 1))}
    floor_f, floor_d = z_f["c"], z_d["d"]  # each leg's lowest value
    fused = convex("zscore").fuse(make_request(LEGS, WEIGHTS))
    assert as_dict(fused) == pytest.approx({
        "a": z_f["a"] + 0.5 * z_d["a"],  # 1.4208
        "b": z_f["b"] + 0.5 * floor_d,  # -0.6864
        "c": z_f["c"] + 0.5 * z_d["c"],  # -0.7344
        "d": floor_f + 0.5 * z_d["d"],  # -1.9111
    })
    assert [hit.id for hit in fused] == ["a", "b", "c", "d"]


def test_max_by_hand():
    fused = convex("max").fuse(make_request(LEGS, WEIGHTS))
    assert as_dict(fused) == pytest.approx({"a": 1 + 0.5 * 4 / 5, "b": 2 / 3, "c": 1 / 3 + 0.5, "d": 0.5 * 1 / 5})
    assert [hit.id for hit in fused] == ["a", "c", "b", "d"]


def test_rank_by_hand():
    # 1 - (r - 1) / n with n = 3: 1, 2/3, 1/3.
    fused = convex("rank").fuse(make_request(LEGS, WEIGHTS))
    assert as_dict(fused) == pytest.approx({"a": 1 + 0.5 * 2 / 3, "b": 2 / 3, "c": 1 / 3 + 0.5, "d": 0.5 / 3})


@pytest.mark.parametrize("norm", ["minmax", "zscore", "max"])
def test_degenerate_legs_give_one_and_floor_zero(norm):
    assert normalise([7.0], norm) == ([1.0], 0.0)
    assert normalise([2.0, 2.0], norm) == ([1.0, 1.0], 0.0)
    assert normalise([-3.0, -3.0], norm) == ([1.0, 1.0], 0.0)
    assert normalise([], norm) == ([], 0.0)


def test_single_hit_leg_still_counts():
    legs = {"fts5": hits(("a", 3), ("b", 2), ("c", 1)), "dense": hits(("x", 0.2))}
    fused = convex().fuse(make_request(legs))
    assert as_dict(fused) == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0, "x": 1.0})
    assert [hit.id for hit in fused][:2] == ["x", "a"]


def test_rank_norm_of_a_single_hit_and_floor():
    assert normalise([0.3], "rank") == ([1.0], 0.0)
    assert normalise([5.0, 5.0, 1.0, 0.0], "rank") == ([1.0, 0.75, 0.5, 0.25], 0.0)


def test_max_norm_with_negative_scores_keeps_order_and_floor_below():
    values, floor = normalise([-1.0, -2.0, -4.0], "max")
    assert values == pytest.approx([-0.25, -0.5, -1.0]) and floor == -1.0
    legs = {"fts5": hits(("a", -1), ("b", -2), ("c", -4)), "dense": hits(("c", 2.0))}
    fused = convex("max").fuse(make_request(legs))
    assert as_dict(fused) == pytest.approx({"a": -0.25, "b": -0.5, "c": -1.0 + 1.0})


def test_weight_zero_leg_and_empty_leg_contribute_nothing():
    fused = convex().fuse(make_request(LEGS, {"fts5": 1.0, "dense": 0.0}))
    assert as_dict(fused) == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0})
    fused = convex().fuse(make_request({"fts5": LEGS["fts5"], "dense": []}))
    assert as_dict(fused) == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0})


def test_depth_and_k():
    fusion = convex(depth=2)
    fused = fusion.fuse(make_request(LEGS, WEIGHTS, k=2))
    # fts5's top 2: a 1, b 0; dense's top 2: c 1, a 0.
    assert [(hit.id, hit.score) for hit in fused] == [("a", 1.0), ("c", 0.5)]
    assert fusion.depth(1) == 2 and fusion.depth(30) == 30 and convex().depth(10) == 100


def test_diagnose_rank_norm_flags_a_light_leg():
    # fts5's 10th of 100: 1 * (1 - 9/100) = 0.91 > 0.5, dense's best.
    warnings = convex("rank").diagnose({"fts5": 1.0, "dense": 0.5}, 10)
    assert len(warnings) == 1
    assert "leg 'dense' (weight 0.5)" in warnings[0] and "0.910000" in warnings[0]
    assert "raise its weight above 0.91" in warnings[0]
    assert convex("rank").diagnose({"fts5": 1.0, "dense": 0.95}, 10) == []


def test_diagnose_minmax_only_bars_at_k_1():
    assert convex().diagnose({"fts5": 1.0, "dense": 0.5}, 10) == []
    warnings = convex().diagnose({"fts5": 1.0, "dense": 0.5}, 1)
    assert len(warnings) == 1 and "leg 'dense'" in warnings[0]
    assert convex("zscore").diagnose({"fts5": 1.0, "dense": 0.01}, 1) == []


def test_the_rank_norm_bar_is_real():
    legs = {"fts5": ranked_ids([f"f{i:03d}" for i in range(100)]), "dense": ranked_ids(["only-dense"])}
    fused = convex("rank").fuse(make_request(legs, {"fts5": 1.0, "dense": 0.5}, k=100))
    assert "only-dense" not in [hit.id for hit in fused[:10]]
    fused = convex("rank").fuse(make_request(legs, {"fts5": 1.0, "dense": 0.95}, k=100))
    assert "only-dense" in [hit.id for hit in fused[:10]]
