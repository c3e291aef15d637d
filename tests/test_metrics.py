"""Each metric on small hand-built rankings, with expected values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recall_kit.measure.evaluation import judge_rankings
from recall_kit.measure.metrics import (
    average_precision,
    hit_at_k,
    judged_at_k,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    recall_all_at_k,
    recall_at_k,
    reciprocal_rank,
)

# q1: relevant a (3), b (1), c (2, never retrieved); x judged not relevant; y, z unjudged.
# q2: nothing relevant in the qrels (only a 0 judgment).
# q3: relevant d, ranking empty.
# q4: not in the qrels at all.
QRELS = {
    "q1": {"a": 3, "b": 1, "c": 2, "x": 0},
    "q2": {"e": 0},
    "q3": {"d": 1},
}
RANKINGS = {
    "q1": ["x", "a", "y", "b", "z"],  # relevant at ranks 2 and 4
    "q2": ["e", "f"],
    "q3": [],
    "q4": ["g"],
}


@pytest.fixture
def data():
    # complete=True keeps q4, to pin how each metric scores a query with no judgments.
    return judge_rankings(list(RANKINGS), list(RANKINGS.values()), QRELS, complete=True)


def approx(values):
    return pytest.approx(values, abs=1e-12)


def test_recall(data):
    assert recall_at_k(data, 1).tolist() == [0.0, 0.0, 0.0, 0.0]
    assert recall_at_k(data, 2).tolist() == approx([1 / 3, 0.0, 0.0, 0.0])
    assert recall_at_k(data, 10).tolist() == approx([2 / 3, 0.0, 0.0, 0.0])


def test_recall_all():
    qrels = {"q": {"a": 1, "b": 2}}
    data = judge_rankings(["q"], [["a", "z", "b"]], qrels)
    assert recall_all_at_k(data, 2).tolist() == [0.0]
    assert recall_all_at_k(data, 3).tolist() == [1.0]


def test_recall_all_is_zero_without_relevant(data):
    # q1 misses c; q2 has nothing relevant (0, not a vacuous 1).
    assert recall_all_at_k(data, 100).tolist() == [0.0, 0.0, 0.0, 0.0]


def test_precision_divides_by_k_even_for_short_rankings(data):
    assert precision_at_k(data, 2).tolist() == approx([1 / 2, 0.0, 0.0, 0.0])
    assert precision_at_k(data, 5).tolist() == approx([2 / 5, 0.0, 0.0, 0.0])
    assert precision_at_k(data, 10).tolist() == approx([2 / 10, 0.0, 0.0, 0.0])


def test_hit(data):
    assert hit_at_k(data, 1).tolist() == [0.0, 0.0, 0.0, 0.0]
    assert hit_at_k(data, 2).tolist() == [1.0, 0.0, 0.0, 0.0]


def test_ndcg_graded_linear_gain_log2_discount(data):
    dcg = 3 / math.log2(3) + 1 / math.log2(5)  # a (3) at rank 2, b (1) at rank 4
    ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)  # a, c, b
    assert ndcg_at_k(data, 10).tolist() == approx([dcg / ideal, 0.0, 0.0, 0.0])
    # Cut at 2: only a counts; the ideal is cut at 2 as well.
    assert ndcg_at_k(data, 2)[0] == pytest.approx((3 / math.log2(3)) / (3 + 2 / math.log2(3)))


def test_ndcg_perfect_ranking_is_one():
    data = judge_rankings(["q"], [["a", "c", "b"]], {"q": {"a": 3, "b": 1, "c": 2}})
    assert ndcg_at_k(data, 3).tolist() == approx([1.0])


def test_ndcg_negative_grades_count_as_zero():
    data = judge_rankings(["q"], [["n", "a"]], {"q": {"a": 1, "n": -2}})
    assert ndcg_at_k(data, 2).tolist() == approx([(1 / math.log2(3)) / 1.0])


def test_reciprocal_rank(data):
    assert reciprocal_rank(data, None).tolist() == approx([1 / 2, 0.0, 0.0, 0.0])
    assert reciprocal_rank(data, 1).tolist() == [0.0, 0.0, 0.0, 0.0]
    assert reciprocal_rank(data, 2).tolist() == approx([1 / 2, 0.0, 0.0, 0.0])


def test_average_precision(data):
    # precision at rank 2 is 1/2, at rank 4 is 2/4; three relevant in all.
    assert average_precision(data, None).tolist() == approx([(1 / 2 + 2 / 4) / 3, 0, 0, 0])
    # map_cut_3: only the relevant at rank 2, still divided by all 3 relevant.
    assert average_precision(data, 3).tolist() == approx([(1 / 2) / 3, 0, 0, 0])


def test_r_precision(data):
    # R = 3 for q1: top 3 = x, a, y -> one relevant. R = 1 for q3, whose ranking is empty.
    assert r_precision(data, None).tolist() == approx([1 / 3, 0.0, 0.0, 0.0])


def test_r_precision_short_ranking_divides_by_r():
    data = judge_rankings(["q"], [["a"]], {"q": {"a": 1, "b": 1, "c": 1, "d": 1}})
    assert r_precision(data, None).tolist() == approx([1 / 4])


def test_judged(data):
    # q1 top 2: x (judged 0), a -> 2/2; top 5: x, a, b judged -> 3/5.
    # q2: e judged, f not -> 1/2 at k=10 (denominator min(10, 2) = 2).
    # q3: empty ranking -> 0; q4: g unjudged -> 0.
    assert judged_at_k(data, 2).tolist() == approx([1.0, 0.5, 0.0, 0.0])
    assert judged_at_k(data, 5).tolist() == approx([3 / 5, 0.5, 0.0, 0.0])
    assert judged_at_k(data, 10).tolist() == approx([3 / 5, 0.5, 0.0, 0.0])


def test_depth_truncates_before_scoring():
    qrels = {"q": {"b": 1}}
    data = judge_rankings(["q"], [["a", "b"]], qrels, depth=1)
    assert data.lengths.tolist() == [1]
    assert recall_at_k(data, 10).tolist() == [0.0]
    assert reciprocal_rank(data, None).tolist() == [0.0]


def test_no_queries_and_no_documents():
    data = judge_rankings([], [], {})
    for function in (
        recall_at_k,
        precision_at_k,
        hit_at_k,
        ndcg_at_k,
        judged_at_k,
        recall_all_at_k,
    ):
        assert function(data, 5).shape == (0,)
    for function in (reciprocal_rank, average_precision, r_precision):
        assert function(data, None).shape == (0,)
    data = judge_rankings(["q"], [[]], {"q": {"a": 2}})
    assert ndcg_at_k(data, 10).tolist() == [0.0]
    assert average_precision(data, None).tolist() == [0.0]
    assert r_precision(data, None).tolist() == [0.0]
    assert reciprocal_rank(data, None).tolist() == [0.0]


def test_results_are_float64_one_per_query(data):
    for function, cutoff in [(recall_at_k, 5), (ndcg_at_k, 5), (reciprocal_rank, None)]:
        values = function(data, cutoff)
        assert values.dtype == np.float64 and values.shape == (4,)


@pytest.mark.parametrize("cutoff", [None, 0, -1, True])
def test_bad_cutoffs_are_rejected(data, cutoff):
    with pytest.raises(ValueError):
        recall_at_k(data, cutoff)


def test_r_precision_takes_no_cutoff(data):
    with pytest.raises(ValueError):
        r_precision(data, 5)


def test_duplicate_document_in_a_ranking_is_refused():
    with pytest.raises(ValueError, match="'a' twice"):
        judge_rankings(["q"], [["a", "b", "a"]], {})
