"""A leg's index stats over its scopes: counts summed, ratios averaged by their counts, never summed."""

from __future__ import annotations

import pytest
from helpers import OverlapRetriever, write_dataset

from recall_kit import load_dataset, run_benchmark
from recall_kit.measure.run.index_stats import merge_index_stats


def test_counts_sum_and_ratios_average_by_their_denominator():
    alice = {"rows": 10, "ann_recall_at_k": 0.9, "ann_recall_matched": 9, "ann_recall_expected": 10,
             "sql_ms_p50": 2.0, "index": "hnsw", "cache_hit": True, "edges_by_type": {"same_session": 3}}
    bob = {"rows": 30, "ann_recall_at_k": 0.5, "ann_recall_matched": 15, "ann_recall_expected": 30,
           "sql_ms_p50": 4.0, "index": "hnsw", "cache_hit": False, "edges_by_type": {"same_session": 4}}
    merged = merge_index_stats([alice, bob], [1, 3])
    assert merged["rows"] == 40
    assert merged["ann_recall_matched"] == 24 and merged["ann_recall_expected"] == 40
    # The recall over both indexes, (9 + 15) / (10 + 30) = 0.6: not 0.9 + 0.5 = 1.4, nor the plain mean 0.7.
    assert merged["ann_recall_at_k"] == pytest.approx(24 / 40)
    # A measurement with no denominator of its own: weighted by the queries each scope searched.
    assert merged["sql_ms_p50"] == pytest.approx((2.0 * 1 + 4.0 * 3) / 4)
    assert merged["index"] == "hnsw"
    assert merged["cache_hit"] == [True, False]  # scopes disagree: both are shown, not the first
    assert merged["edges_by_type"] == {"same_session": 7}


def test_settings_are_kept_or_listed_never_summed():
    alice = {"rows": 10, "dimension": 384, "edge_types": 5, "nested": {"m": 16, "rows": 1}}
    bob = {"rows": 30, "dimension": 384, "edge_types": 7, "nested": {"m": 16, "rows": 2}}
    merged = merge_index_stats([alice, bob], [1, 1], settings={"dimension", "edge_types", "m"})
    assert merged == {"rows": 40, "dimension": 384, "edge_types": [5, 7], "nested": {"m": 16, "rows": 3}}


def test_a_ratio_is_never_above_one_however_many_scopes():
    scopes = [{"ann_recall_at_k": 0.95} for _ in range(5)]
    assert merge_index_stats(scopes, [2] * 5)["ann_recall_at_k"] == pytest.approx(0.95)


def test_one_scope_is_kept_as_it_is():
    assert merge_index_stats([{"ratio": 0.25, "rows": 3}], [7]) == {"ratio": 0.25, "rows": 3}


class RecallReporting(OverlapRetriever):
    """Reports a ratio with its counts, as the dense and pgvector legs report ANN recall, and a
    setting (a vector dimension) that every index shares."""

    index_settings = frozenset({"dimension"})

    def index_stats(self):  # type: ignore[no-untyped-def]
        matched, expected = (1, 2) if len(self.index) == 1 else (3, 3)
        return {"rows": len(self.index), "ann_recall_at_k": matched / expected,
                "ann_recall_matched": matched, "ann_recall_expected": expected, "dimension": 384}


def test_the_runner_averages_a_ratio_over_scopes(tmp_path):
    corpus = [{"id": 1, "content": "alpha beta", "scope": "alice"},
              {"id": 2, "content": "alpha beta", "scope": "bob"},
              {"id": 3, "content": "alpha", "scope": "bob"}]
    queries = [{"query_id": "qa", "text": "alpha beta", "scope": "alice"},
               {"query_id": "qb", "text": "alpha beta", "scope": "bob"}]
    qrels = [{"query_id": "qa", "relevant_ids": [1]}, {"query_id": "qb", "relevant_ids": [2]}]
    dataset = load_dataset(write_dataset(tmp_path / "s", corpus, queries, qrels))
    stats = run_benchmark(RecallReporting, dataset, k=5).index.legs["RecallReporting"].stats
    assert stats["rows"] == 3
    assert stats["ann_recall_at_k"] == pytest.approx((1 + 3) / (2 + 3))  # not 0.5 + 1.0
    assert stats["dimension"] == 384  # not 768: a setting, not a count
