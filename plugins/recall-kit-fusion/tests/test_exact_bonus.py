"""Exact-phrase bonus: matching rules, the default bonus, min_chars, and where it may stand."""

from __future__ import annotations

import pytest
from fusion_test_helpers import as_dict, hits, make_request
from recall_kit_fusion.exact_bonus import ExactBonus, normalise_text, query_phrase

from recall_kit import Memory
from recall_kit.measure.runner import fuse_one
from recall_kit.measure.system import Leg, System, SystemSpec

CORPUS = [
    Memory("m1", "Decided: the   Sessionisation\nwindow is 30 minutes, not 45."),
    Memory("m2", "the sessionisation window is thirty minutes"),
    Memory("m3", "unrelated note about backups"),
]
RANKING = hits(("m2", 0.9), ("m3", 0.8), ("m1", 0.5))
QUERY = "sessionisation window is 30 minutes"


def rerank(query: str = QUERY, ranking=RANKING, **options):
    request = make_request({"fused": []}, ranking=list(ranking), query=query, corpus=CORPUS, k=10)
    return ExactBonus(ExactBonus.Options(**options)).fuse(request)


def test_default_bonus_lifts_the_match_to_the_top():
    fused = rerank()
    assert [hit.id for hit in fused] == ["m1", "m2", "m3"]
    # bonus = (0.9 - 0.5) + 1e-6 * max(1, 0.9, 0.5)
    assert as_dict(fused)["m1"] == pytest.approx(0.5 + 0.4 + 1e-6, abs=1e-12)
    assert as_dict(fused)["m2"] == 0.9 and as_dict(fused)["m3"] == 0.8


def test_match_ignores_case_and_whitespace_runs():
    assert normalise_text("  A\t B\n\nc ") == "a b c"
    fused = rerank("  SESSIONISATION   window is 30\nminutes ")
    assert fused[0].id == "m1"


def test_explicit_bonus():
    fused = rerank(bonus=0.1)
    assert as_dict(fused)["m1"] == pytest.approx(0.6)
    assert [hit.id for hit in fused] == ["m2", "m3", "m1"]
    fused = rerank(bonus=0.35)  # 0.85: between m2 and m3
    assert [hit.id for hit in fused] == ["m2", "m1", "m3"]


def test_longest_quoted_phrase_is_the_phrase():
    assert query_phrase('when did we say "window is 30" and "Sessionisation window is 30"?') == (
        "sessionisation window is 30"
    )
    assert query_phrase("no quotes here") == "no quotes here"
    fused = rerank('what did I note about "sessionisation window is 30 minutes" last week')
    assert fused[0].id == "m1"


def test_queries_shorter_than_min_chars_get_no_bonus():
    assert len("30 minutes") == 10
    assert [hit.id for hit in rerank("30 minutes")] == ["m1", "m2", "m3"]  # 10 chars: bonus
    assert [hit.id for hit in rerank("30 minute")] == ["m2", "m3", "m1"]  # 9 chars: none
    assert [hit.id for hit in rerank("30 minute", min_chars=5)] == ["m1", "m2", "m3"]


def test_no_match_keeps_the_order():
    fused = rerank("something nobody wrote down")
    assert [(hit.id, hit.score) for hit in fused] == [("m2", 0.9), ("m3", 0.8), ("m1", 0.5)]


def test_several_matches_keep_their_order_above_the_rest():
    ranking = hits(("m3", 0.9), ("m2", 0.7), ("m1", 0.5))
    fused = rerank("window is", ranking=ranking, min_chars=5)
    assert [hit.id for hit in fused] == ["m2", "m1", "m3"]


def test_first_step_of_a_single_leg_system_reranks_that_leg():
    # Directly: no ranking, one leg.
    request = make_request({"fts5": list(RANKING)}, query=QUERY, corpus=CORPUS)
    assert [hit.id for hit in ExactBonus().fuse(request)] == ["m1", "m2", "m3"]
    # Through the runner's chain.
    leg = Leg(name="fts5", factory=lambda: None, options=None, weight=1.0, plugin="test")  # type: ignore[arg-type,return-value]
    system = System(SystemSpec("fts5", ["exact-bonus"]), [leg], [ExactBonus()], ["exact-bonus"])
    fused = fuse_one(system, request.query, {"fts5": list(RANKING)}, request.corpus, 10)
    assert [hit.id for hit in fused] == ["m1", "m2", "m3"]


def test_several_legs_and_no_ranking_is_an_error():
    request = make_request({"a": list(RANKING), "b": list(RANKING)}, query=QUERY, corpus=CORPUS)
    with pytest.raises(ValueError, match="only re-ranks"):
        ExactBonus().fuse(request)


def test_bad_options():
    with pytest.raises(ValueError):
        ExactBonus.Options(bonus=-1.0)
    with pytest.raises(ValueError):
        ExactBonus.Options(min_chars=-1)
