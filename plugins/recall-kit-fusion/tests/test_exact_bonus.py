"""Exact-phrase bonus: matching rules, the default bonus, min_chars, and where it may stand."""

from __future__ import annotations

import json

import pytest
from fusion_test_helpers import as_dict, hits, make_request
from recall_kit_fusion.exact_bonus import ExactBonus, normalise_text, query_phrase

from recall_kit import Memory, SystemSpec, load_dataset, run_benchmark
from recall_kit.plugin import Retriever, hookimpl
from recall_kit.testing import registered_plugin

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


class FixedRanking(Retriever):
    """A leg that returns RANKING for every query."""

    def build_index(self, corpus):
        pass

    def search(self, query, k):
        return list(RANKING)[:k]


class FixedRankingPlugin:
    @hookimpl
    def register_retrievers(self, register):
        register("fixed", FixedRanking)


def test_first_step_of_a_single_leg_system_reranks_that_leg(tmp_path, fusion_plugin):
    # Directly: no ranking, one leg.
    request = make_request({"fts5": list(RANKING)}, query=QUERY, corpus=CORPUS)
    assert [hit.id for hit in ExactBonus().fuse(request)] == ["m1", "m2", "m3"]
    # Through a real run: `--retriever fixed --fusion exact-bonus` re-ranks the one leg.
    rows = {
        "corpus": [{"id": memory.id, "content": memory.content} for memory in CORPUS],
        "queries": [{"query_id": "q1", "text": QUERY}],
        "qrels": [{"query_id": "q1", "relevance": {"m1": 1}}],
    }
    for name, lines in rows.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with registered_plugin(FixedRankingPlugin(), name="fixed-ranking"):
        result = run_benchmark(SystemSpec("fixed", ["exact-bonus"]), load_dataset(tmp_path), k=3,
                               metrics=["mrr"], latency_sample=0)
    assert result.rankings() == {"q1": ["m1", "m2", "m3"]}


def test_several_legs_and_no_ranking_is_an_error():
    request = make_request({"a": list(RANKING), "b": list(RANKING)}, query=QUERY, corpus=CORPUS)
    with pytest.raises(ValueError, match="only re-ranks"):
        ExactBonus().fuse(request)


def test_bad_options():
    with pytest.raises(ValueError):
        ExactBonus.Options(bonus=-1.0)
    with pytest.raises(ValueError):
        ExactBonus.Options(min_chars=-1)
