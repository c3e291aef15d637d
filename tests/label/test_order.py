"""The label page's order (recall_kit/label/order.py): one query at a time, the sample first, then
what can move a verdict, then the pool; the query on screen kept; checks drawn alike for everyone."""

from __future__ import annotations

from recall_kit.label.order import check_pairs, label_order

WEIGHTED = [("q2", "a", 0.5), ("q1", "b", 0.9), ("q2", "c", 0.1)]
POOL = [("q3", "x"), ("q1", "b"), ("q1", "y"), ("q2", "a")]


def test_queries_by_their_heaviest_pair_then_the_pool_grouped() -> None:
    assert label_order(WEIGHTED, POOL) == [("q1", "b"), ("q2", "a"), ("q2", "c"), ("q3", "x"), ("q1", "y")]


def test_the_sample_comes_first_whole() -> None:
    # q3 has no pair that can move a verdict, but the sample needs it labelled: first, every pair
    assert label_order(WEIGHTED, POOL, first=["q3", "q2"])[:3] == [("q3", "x"), ("q2", "a"), ("q2", "c")]


def test_a_studys_sample_offers_its_own_pairs_of_each_query_first() -> None:
    # the sample's pairs of q1 (b, and z: a hole of another system no pool holds) and of q3; q1's pooled y
    # is no sample pair: it waits for the pool's phase; q2 (not in the sample) comes after the sample
    sample = [("q1", "z"), ("q1", "b"), ("q3", "x")]
    order = label_order(WEIGHTED, POOL, first=["q1", "q3"], sample=sample)
    assert order == [("q1", "b"), ("q1", "z"), ("q3", "x"), ("q2", "a"), ("q2", "c"), ("q1", "y")]


def test_the_query_on_screen_is_finished_before_the_next() -> None:
    assert label_order(WEIGHTED, POOL, pinned="q2")[:2] == [("q2", "a"), ("q2", "c")]
    # when no pair can move a verdict any more, the pool's pinned query goes first
    assert label_order([], POOL, pinned="q1") == [("q1", "b"), ("q1", "y"), ("q3", "x"), ("q2", "a")]


def test_checks_hold_both_kinds_and_are_the_same_for_every_assessor() -> None:
    judged = {"q1": {"r1": 1, "r2": 2, "n1": 0, "n2": 0}, "q2": {"r3": 1}}
    first = check_pairs({"q1": 20, "q2": 3, "q9": 4}, judged, share=0.2, seed=7)
    assert first == check_pairs({"q1": 20, "q2": 3, "q9": 4}, judged, share=0.2, seed=7)
    picked = {doc: grade for (query, doc), grade in first.items() if query == "q1"}
    assert len(picked) == 4 and sorted(picked.values()) == [0, 0, 1, 2]  # 0.2 * 20, both kinds
    assert list(first)[-1] == ("q2", "r3") and not any(query == "q9" for query, _ in first)
    assert check_pairs({"q1": 20}, judged, share=0.0) == {}
