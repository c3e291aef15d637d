"""Each metric on small hand-built rankings, with expected values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recall_kit.measure.score.evaluation import judge_rankings
from recall_kit.measure.score.metrics import (
    average_precision,
    bpref,
    expected_reciprocal_rank,
    f1_at_k,
    hit_at_k,
    inferred_average_precision,
    judged_at_k,
    ndcg_at_k,
    ndcg_exponential_at_k,
    num_relevant,
    num_relevant_retrieved,
    num_retrieved,
    precision_at_k,
    r_precision,
    recall_all_at_k,
    recall_at_k,
    reciprocal_rank,
)
from recall_kit.measure.score.metrics.infap import INFAP_EPSILON

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


# ---- counts, bpref, infAP, ERR, exponential nDCG, F1, uncut nDCG -------------------------------


def test_counts(data):
    assert num_retrieved(data).tolist() == [5.0, 2.0, 0.0, 1.0]
    assert num_relevant(data).tolist() == [3.0, 0.0, 1.0, 0.0]
    assert num_relevant_retrieved(data).tolist() == [2.0, 0.0, 0.0, 0.0]
    for function in (num_retrieved, num_relevant, num_relevant_retrieved, bpref, inferred_average_precision):
        with pytest.raises(ValueError, match="takes no cutoff"):
            function(data, 5)


def test_bpref_counts_judged_nonrelevant_above_each_relevant():
    # R = 2 relevant, N = 3 judged non-relevant; u is unjudged and ignored.
    # a: nothing non-relevant above -> 1; b: n1 above -> 1 - min(1, 2) / min(3, 2) = 1/2.
    qrels = {"q": {"a": 1, "b": 1, "n1": 0, "n2": 0, "n3": 0}}
    data = judge_rankings(["q"], [["a", "n1", "u", "b", "n2"]], qrels)
    assert bpref(data).tolist() == approx([(1 + 1 / 2) / 2])


def test_bpref_ignores_pooled_unjudged_and_misses_count_zero(data):
    # p (-1) is pooled but not judged: not non-relevant. N = 1, so one non-relevant above b costs
    # min(1, 2) / min(1, 2) = 1 -> b contributes 0.
    qrels = {"q": {"a": 1, "b": 1, "n": 0, "p": -1}}
    assert bpref(judge_rankings(["q"], [["a", "p", "n", "b"]], qrels)).tolist() == approx([0.5])
    assert bpref(judge_rankings(["q"], [["a", "p", "b", "n"]], qrels)).tolist() == approx([1.0])
    # The fixture: q1's x (judged 0) stands above both relevant found, N = 1: each term is 0.
    assert bpref(data).tolist() == approx([0.0, 0.0, 0.0, 0.0])


def test_infap_with_a_sampled_pool():
    # a relevant at rank 1 -> 1. b relevant at rank 4: above it a (relevant), p (pooled, -1:
    # not sampled for judging) and x (not in the pool). E[prec@4] = 1/4 + (3/4) * (2/3) * 1:
    # two of the three above are pooled, and the judged ones above are all relevant.
    qrels = {"q": {"a": 1, "b": 1, "n": 0, "p": -1}}
    data = judge_rankings(["q"], [["a", "p", "x", "b", "n"]], qrels)
    eps = INFAP_EPSILON
    expected_b = (1 + 2 * (1 + eps) / (1 + 2 * eps)) / 4
    assert inferred_average_precision(data).tolist() == approx([(1 + expected_b) / 2])
    assert expected_b == pytest.approx(0.75, abs=1e-4)


def test_infap_with_complete_judgments_is_average_precision(data):
    np.testing.assert_allclose(
        inferred_average_precision(data), average_precision(data, None), atol=1e-4
    )


def test_err_cascade_with_gdeval_grade_scale(data):
    # q1: x (0) at 1, a (3) at 2: R = 7/16; b (1) at 4: R = 1/16, reached with 1 - 7/16 = 9/16.
    assert expected_reciprocal_rank(data, 1).tolist() == [0.0, 0.0, 0.0, 0.0]
    assert expected_reciprocal_rank(data, 2).tolist() == approx([7 / 32, 0.0, 0.0, 0.0])
    assert expected_reciprocal_rank(data, 10).tolist() == approx([7 / 32 + (1 / 16) * (9 / 16) / 4, 0, 0, 0])
    # Grades above 4 count as 4 (R = 15/16), never as a probability above 1.
    high = judge_rankings(["q"], [["a", "b"]], {"q": {"a": 9, "b": 4}})
    assert expected_reciprocal_rank(high, 2).tolist() == approx([15 / 16 + (15 / 16) * (1 / 16) / 2])


def test_ndcg_exponential_gain(data):
    dcg = 7 / math.log2(3) + 1 / math.log2(5)  # a (2^3 - 1) at rank 2, b (2^1 - 1) at rank 4
    ideal = 7 + 3 / math.log2(3) + 1 / math.log2(4)  # a, c (2^2 - 1), b
    assert ndcg_exponential_at_k(data, 10).tolist() == approx([dcg / ideal, 0.0, 0.0, 0.0])
    assert ndcg_exponential_at_k(data, None).tolist() == approx([dcg / ideal, 0.0, 0.0, 0.0])
    binary = judge_rankings(["q"], [["n", "a", "b"]], {"q": {"a": 1, "b": 1, "c": 1}})
    np.testing.assert_allclose(ndcg_exponential_at_k(binary, 2), ndcg_at_k(binary, 2))


def test_ndcg_without_cutoff_covers_the_whole_ranking_and_every_judgment():
    # Ranking of 12; the relevant r at rank 12 counts only uncut. Ideal: r first.
    ranking = [f"n{i}" for i in range(11)] + ["r"]
    data = judge_rankings(["q"], [ranking], {"q": {"r": 1}})
    assert ndcg_at_k(data, 10).tolist() == [0.0]
    assert ndcg_at_k(data, None).tolist() == approx([1 / math.log2(13)])


def test_f1(data):
    # q1: 1 relevant in the top 2 of R = 3: 2 * 1 / (2 + 3). Top 5: 2 * 2 / (5 + 3).
    assert f1_at_k(data, 2).tolist() == approx([2 / 5, 0.0, 0.0, 0.0])
    assert f1_at_k(data, 5).tolist() == approx([1 / 2, 0.0, 0.0, 0.0])
    # k beyond the ranking: precision still divides by k, as P_k does.
    assert f1_at_k(data, 10).tolist() == approx([4 / 13, 0.0, 0.0, 0.0])
    # Uncut (trec_eval set_F): precision over the 5 retrieved.
    assert f1_at_k(data, None).tolist() == approx([1 / 2, 0.0, 0.0, 0.0])
    p, r = precision_at_k(data, 2)[0], recall_at_k(data, 2)[0]
    assert f1_at_k(data, 2)[0] == pytest.approx(2 * p * r / (p + r))


# ---- relevance level (-l), judged only (-J), grade -1 --------------------------------------------


def test_relevance_level_changes_binary_measures_not_gains():
    level2 = judge_rankings(list(RANKINGS), list(RANKINGS.values()), QRELS, complete=True, relevance_level=2)
    level1 = judge_rankings(list(RANKINGS), list(RANKINGS.values()), QRELS, complete=True)
    # q1: a (3) and c (2) are relevant, b (1) is now judged non-relevant, as x (0) is; q3 has none.
    assert level2.num_relevant.tolist() == [2, 0, 0, 0]
    assert level2.num_judged_nonrelevant.tolist() == [2, 1, 1, 0]  # q3: d (1) too
    assert recall_at_k(level2, 10).tolist() == approx([1 / 2, 0.0, 0.0, 0.0])
    assert precision_at_k(level2, 5).tolist() == approx([1 / 5, 0.0, 0.0, 0.0])
    assert average_precision(level2, None).tolist() == approx([(1 / 2) / 2, 0, 0, 0])
    # nDCG reads the grades themselves, whatever the level (as trec_eval's ndcg).
    np.testing.assert_array_equal(ndcg_at_k(level2, 10), ndcg_at_k(level1, 10))


@pytest.mark.parametrize("level", [0, -1, 1.5, True])
def test_bad_relevance_level_is_refused(level):
    with pytest.raises(ValueError, match="relevance level"):
        judge_rankings(["q"], [["a"]], {"q": {"a": 1}}, relevance_level=level)


def test_judged_only_drops_unjudged_before_scoring():
    data = judge_rankings(list(RANKINGS), list(RANKINGS.values()), QRELS, complete=True, judged_only=True)
    # q1: x, a, y, b, z -> x, a, b; q2: e, f -> e; q4's g is unjudged -> empty.
    assert data.lengths.tolist() == [3, 1, 0, 0]
    assert data.grades[0].tolist() == [0, 3, 1]
    assert num_retrieved(data).tolist() == [3.0, 1.0, 0.0, 0.0]
    assert reciprocal_rank(data, None).tolist() == approx([1 / 2, 0.0, 0.0, 0.0])
    assert average_precision(data, None).tolist() == approx([(1 / 2 + 2 / 3) / 3, 0, 0, 0])
    assert judged_at_k(data, 10).tolist() == approx([1.0, 1.0, 0.0, 0.0])


def test_judged_only_drops_pooled_unjudged_too_and_cuts_depth_first():
    qrels = {"q": {"a": 1, "p": -1, "n": 0}}
    data = judge_rankings(["q"], [["p", "u", "a", "n"]], qrels, depth=3, judged_only=True)
    assert data.lengths.tolist() == [1]  # top 3 = p, u, a -> a; n was past the depth
    assert reciprocal_rank(data, None).tolist() == [1.0]


def test_grade_minus_one_is_pooled_not_judged():
    # trec_eval: a negative grade is "in the pool, not judged" -> not relevant, not a judgment.
    data = judge_rankings(["q"], [["a", "p", "z"]], {"q": {"a": 1, "p": -1}})
    assert data.judged.tolist() == [[True, False, False]]
    assert data.pooled.tolist() == [[True, True, False]]
    assert judged_at_k(data, 2).tolist() == approx([1 / 2])
    assert judged_at_k(data, 3).tolist() == approx([1 / 3])
    assert data.num_relevant.tolist() == [1] and data.num_judged_nonrelevant.tolist() == [0]
    assert ndcg_at_k(data, 3).tolist() == approx([1.0])


def test_new_metrics_on_no_queries_and_empty_rankings():
    empty = judge_rankings([], [], {})
    for function, cutoff in [
        (expected_reciprocal_rank, 5), (ndcg_exponential_at_k, 5), (f1_at_k, 5), (f1_at_k, None),
        (ndcg_at_k, None), (bpref, None), (inferred_average_precision, None), (num_retrieved, None),
        (num_relevant, None), (num_relevant_retrieved, None),
    ]:
        assert function(empty, cutoff).shape == (0,)
    blank = judge_rankings(["q"], [[]], {"q": {"a": 2}})
    for function, cutoff in [
        (expected_reciprocal_rank, 5), (ndcg_exponential_at_k, 5), (f1_at_k, 5), (bpref, None),
        (inferred_average_precision, None), (num_retrieved, None), (num_relevant_retrieved, None),
    ]:
        assert function(blank, cutoff).tolist() == [0.0]
