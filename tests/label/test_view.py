"""What the label page's JSON is made of (recall_kit.label.view): the query's words to highlight and how
differently two top-k lists rank (1 - rank-biased overlap), on hand-worked cases."""

from __future__ import annotations

import pytest

from recall_kit.label.view import query_terms, rank_distance


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
