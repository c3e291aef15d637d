"""What the label page's JSON is made of (recall_kit.label.view): typed views whose `to_json` is what the
server sends, the query's words to highlight and how differently two top-k lists rank (1 - rank-biased
overlap), on hand-worked cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recall_kit.label.session import open_session
from recall_kit.label.view import Contrast, Item, PageState, Rank, contrast, query_terms, rank_distance, state

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"


def test_the_page_state_is_typed_and_its_json_keeps_the_keys_the_page_reads(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "exact_001", "doc_ids": ["10", "11"]}) + "\n", encoding="utf-8")
    session = open_session(None, "alice", pool=pool, dataset=EXAMPLE)
    try:
        session.advance()
        shown = state(session)
        assert isinstance(shown, PageState) and isinstance(shown.item, Item)
        assert all(isinstance(rank, Rank) for rank in shown.item.why.ranks) and shown.decision is None
        data = json.loads(json.dumps(shown.to_json()))
        assert list(data) == ["item", "upcoming", "assessor", "given", "total", "scale", "can_go_back", "progress",
                              "previous", "decision"]
        assert list(data["item"]) == ["query_id", "query", "stratum", "doc_id", "memory", "grade", "judged", "note",
                                      "flagged", "why"]
        assert (data["item"]["query_id"], data["item"]["doc_id"], data["assessor"]) == ("exact_001", "10", "alice")
        assert data["scale"] == [{"value": g.value, "name": g.name, "guide": g.guide} for g in session.scale]
        assert data["progress"]["done"] == 0 and data["progress"]["seconds_per_pair"] is None
        session.grade("exact_001", "10", 1)
        after = state(session).to_json()
        assert (after["given"], after["progress"]["done"], after["can_go_back"]) == (1, 1, True)
        # a pool has no baseline and challenger: no contrast, as the page expects it
        assert contrast(session) == Contrast() and contrast(session).to_json() == {"queries": []}
    finally:
        session.close()


def test_query_terms_drop_stopwords_single_letters_and_repeats_in_order() -> None:
    assert query_terms("When did Caroline go to the LGBTQ support group? Caroline, a group") == [
        "caroline", "go", "lgbtq", "support", "group"]


def test_rank_distance_is_zero_for_the_same_list_one_for_disjoint_and_weights_the_top() -> None:
    assert rank_distance(["a", "b", "c"], ["a", "b", "c"]) == 0.0
    assert rank_distance(["a", "b"], ["c", "d"]) == 1.0
    assert rank_distance([], []) == 0.0
    # Swapping the top two differs at depth 1 only: 1 - (1 * 0 + 0.9 * 1 + 0.81 * 1) / (1 + 0.9 + 0.81).
    assert rank_distance(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(1 - 1.71 / 2.71)
    assert rank_distance(["a", "b", "c"], ["b", "a", "c"]) > rank_distance(["a", "b", "c"], ["a", "c", "b"])
