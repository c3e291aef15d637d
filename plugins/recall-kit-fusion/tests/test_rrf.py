"""Weighted reciprocal rank fusion: hand-computed values, options, ties, and the structural check."""

from __future__ import annotations

import pytest
from fusion_test_helpers import as_dict, make_request, ranked_ids
from recall_kit_fusion.rrf import ReciprocalRankFusion

LEGS = {"fts5": ranked_ids(["a", "b", "c"]), "dense": ranked_ids(["c", "a", "d"])}


def test_unweighted_scores_and_order():
    fused = ReciprocalRankFusion().fuse(make_request(LEGS))
    assert [hit.id for hit in fused] == ["a", "c", "b", "d"]
    scores = as_dict(fused)
    assert scores["a"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 2))
    assert scores["c"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert scores["b"] == pytest.approx(1 / (60 + 2))
    assert scores["d"] == pytest.approx(1 / (60 + 3))


def test_weights_scale_each_legs_share():
    fused = ReciprocalRankFusion().fuse(make_request(LEGS, weights={"fts5": 1.0, "dense": 0.5}))
    scores = as_dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 0.5 / 62)  # 0.024458
    assert scores["c"] == pytest.approx(1 / 63 + 0.5 / 61)  # 0.024070
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["d"] == pytest.approx(0.5 / 63)
    assert [hit.id for hit in fused] == ["a", "c", "b", "d"]


def test_weights_can_reorder():
    # dense twice as heavy: c = 1/63 + 2/61 = 0.04866 beats a = 1/61 + 2/62 = 0.04865.
    fused = ReciprocalRankFusion().fuse(make_request(LEGS, weights={"fts5": 1.0, "dense": 2.0}))
    assert [hit.id for hit in fused][:2] == ["c", "a"]
    assert as_dict(fused)["c"] == pytest.approx(1 / 63 + 2 / 61)


def test_weight_zero_leg_contributes_nothing():
    fused = ReciprocalRankFusion().fuse(make_request(LEGS, weights={"fts5": 1.0, "dense": 0.0}))
    assert [(hit.id, hit.score) for hit in fused] == [("a", pytest.approx(1 / 61)), ("b", pytest.approx(1 / 62)),
                                                       ("c", pytest.approx(1 / 63))]


def test_missing_weight_means_one():
    fused = ReciprocalRankFusion().fuse(make_request(LEGS, weights={"fts5": 1.0}))
    assert as_dict(fused)["d"] == pytest.approx(1 / 63)


def test_option_k_changes_the_offset():
    fused = ReciprocalRankFusion(ReciprocalRankFusion.Options(k=10)).fuse(make_request(LEGS))
    assert as_dict(fused)["a"] == pytest.approx(1 / 11 + 1 / 12)
    assert as_dict(fused)["d"] == pytest.approx(1 / 13)


def test_depth_limits_each_leg_and_k_cuts_the_list():
    fusion = ReciprocalRankFusion(ReciprocalRankFusion.Options(depth=2))
    # Each leg contributes max(depth, k) = 2 hits: fts5 a, b; dense c, a.
    fused = fusion.fuse(make_request(LEGS, k=2))
    assert [hit.id for hit in fused] == ["a", "c"]
    assert as_dict(fused)["c"] == pytest.approx(1 / 61)  # fts5's rank-3 c is past the depth
    assert fusion.depth(2) == 2
    assert fusion.depth(150) == 150
    assert ReciprocalRankFusion().depth(10) == 100


def test_ties_are_broken_by_id_as_sort_hits_does():
    legs = {"x": ranked_ids(["m1"]), "y": ranked_ids(["m2"])}
    fused = ReciprocalRankFusion().fuse(make_request(legs))
    assert [hit.id for hit in fused] == ["m2", "m1"]  # both 1/61: trec_eval puts the larger id first
    assert fused[0].score == fused[1].score == pytest.approx(1 / 61)


def test_bad_options_are_rejected():
    with pytest.raises(ValueError):
        ReciprocalRankFusion.Options(k=-1)
    with pytest.raises(ValueError):
        ReciprocalRankFusion.Options(depth=0)


# -- diagnose -------------------------------------------------------------------------------------


def test_diagnose_names_a_leg_whose_best_is_below_every_other_legs_top_k():
    # dense's best: 0.01 / 61 = 0.000164 < fts5's 10th: 1 / 70 = 0.014286.
    warnings = ReciprocalRankFusion().diagnose({"fts5": 1.0, "dense": 0.01}, 10)
    assert len(warnings) == 1
    text = warnings[0]
    assert "leg 'dense' (weight 0.01)" in text
    assert f"{0.01 / 61:.6f}" in text and f"{1 / 70:.6f}" in text
    assert "raise its weight above 0.8714" in text  # 1 * 61 / 70
    assert "rrf.k" not in text  # (0.01 * 10 - 1) / (1 - 0.01) < 0: no rrf.k >= 0 fixes it


def test_diagnose_suggests_the_rrf_k_that_fixes_it():
    # 0.5 / 61 = 0.0082 < 1 / 70 = 0.0143: barred. rrf.k <= (0.5 * 10 - 1) / (1 - 0.5) = 8 fixes it.
    warnings = ReciprocalRankFusion().diagnose({"fts5": 1.0, "dense": 0.5}, 10)
    assert len(warnings) == 1 and "leg 'dense'" in warnings[0]
    assert "lower rrf.k to 8 or less" in warnings[0]
    fixed = ReciprocalRankFusion(ReciprocalRankFusion.Options(k=8))
    assert fixed.diagnose({"fts5": 1.0, "dense": 0.5}, 10) == []  # 0.5 / 9 == 1 / 18: a tie, not a bar
    assert ReciprocalRankFusion(ReciprocalRankFusion.Options(k=9)).diagnose({"fts5": 1.0, "dense": 0.5}, 10)


def test_diagnose_is_quiet_for_sane_configurations():
    fusion = ReciprocalRankFusion()
    assert fusion.diagnose({"fts5": 1.0, "dense": 1.0}, 10) == []
    assert fusion.diagnose({"fts5": 1.0, "dense": 1.0, "graph": 1.0}, 20) == []
    assert fusion.diagnose({"fts5": 1.0, "dense": 0.9}, 10) == []  # 0.9 / 61 = 0.01475 > 1 / 70
    assert fusion.diagnose({"fts5": 1.0, "dense": 0.0}, 10) == []  # weight 0 is the user's choice
    assert fusion.diagnose({"fts5": 1.0}, 10) == []


def test_the_diagnosed_bar_is_real():
    """The flagged leg's rank-1 document misses the top 10 whenever fts5 returns 10 hits."""
    legs = {"fts5": ranked_ids([f"f{i}" for i in range(10)]), "dense": ranked_ids(["only-dense"])}
    weights = {"fts5": 1.0, "dense": 0.5}
    assert ReciprocalRankFusion().diagnose(weights, 10)
    fused = ReciprocalRankFusion().fuse(make_request(legs, weights=weights, k=100))
    assert "only-dense" not in [hit.id for hit in fused[:10]]
    # At weight 0.9 the same document places.
    fused = ReciprocalRankFusion().fuse(make_request(legs, weights={"fts5": 1.0, "dense": 0.9}, k=100))
    assert "only-dense" in [hit.id for hit in fused[:10]]


def test_ranked_is_sort_hits_top_k_on_ties_and_extremes():
    """`ranked` selects with a heap or one sort; either must keep exactly sort_hits' order and cut: float32 ties
    broken by id descending, -0.0 equal to 0.0, values past float32's range as +-inf."""
    import random

    from recall_kit_fusion._common import ranked

    from recall_kit import Hit, sort_hits

    rng = random.Random(7)
    values = [1.0, 1.0 + 1e-9, 0.5, -0.0, 0.0, 1 / 61, 1 / 62 + 1 / 70, 1e39, -1e39, float("inf")]
    for _ in range(500):
        scores = {rng.choice([f"d{rng.randint(0, 40)}", str(rng.randint(0, 99)), "é", ""]):
                  rng.choice([*values, rng.random()]) for _ in range(rng.randint(0, 40))}
        k = rng.randint(0, 45)
        expected = sort_hits([Hit(doc, score) for doc, score in scores.items()])[:k]
        assert [(h.id, h.score) for h in ranked(scores, k)] == [(h.id, h.score) for h in expected]


@pytest.mark.parametrize("seed", range(5))
def test_scores_are_the_formula_to_the_last_bit(seed):
    # Each score is the sum of w / (k + rank) over the legs in their order, ranks in order: the
    # first leg's shares taken as they are, a leg that repeats an id (no runner sends one, a
    # caller may) counting it at each of its ranks, as the formula's loop does.
    import random

    from recall_kit import Hit, sort_hits

    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(150)]
    legs = {name: [Hit(doc, 1.0) for doc in rng.sample(pool, rng.randint(0, 100))] for name in ("a", "b", "c")}
    if seed % 2:
        legs["a"] = legs["a"] + legs["a"][:3]  # repeated ids in the first leg
    weights = {"a": rng.choice([1.0, 0.7]), "b": 1.3, "c": 1.0}
    expected: dict[str, float] = {}
    for name, hits in legs.items():
        for rank, hit in enumerate(hits[:100], start=1):
            expected[hit.id] = expected.get(hit.id, 0.0) + weights[name] / (60 + rank)
    for k in (5, 100):
        fused = ReciprocalRankFusion().fuse(make_request(legs, weights=weights, k=k))
        assert fused == sort_hits([Hit(doc, score) for doc, score in expected.items()])[:k]
