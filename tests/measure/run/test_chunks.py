"""Chunked corpora: rows with `parent_id` are ranked as chunks and scored as their parents."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from recall_kit import Corpus, Hit, QueryResult, Retriever
from recall_kit.dataset import load_dataset
from recall_kit.measure.run.runner import run_benchmark, to_parents


class ChunkOverlapRetriever(Retriever):
    """Score = number of distinct query words in the chunk (ties resolved by the runner)."""

    def build_index(self, corpus: Corpus) -> None:
        self.index = [(m.id, set(re.findall(r"\w+", m.content.lower()))) for m in corpus]

    def search(self, query: str, k: int) -> list[Hit]:
        terms = set(re.findall(r"\w+", query.lower()))
        hits = [Hit(doc, float(len(terms & words))) for doc, words in self.index if terms & words]
        hits.sort(key=lambda hit: -hit.score)
        return hits[:k]


CORPUS = [
    {"id": "A#1", "parent_id": "A", "content": "kestrel clickhouse events"},
    {"id": "A#2", "parent_id": "A", "content": "kestrel clickhouse runbook"},
    {"id": "A#3", "parent_id": "A", "content": "kestrel clickhouse"},
    {"id": "B#1", "parent_id": "B", "content": "storage driftwood"},
    {"id": "C#1", "parent_id": "C", "content": "driftwood deploy friday"},
    {"id": "C#2", "parent_id": "C", "content": "deploy friday"},
    {"id": "s1", "content": "friday lunch"},  # no parent: scored as itself
]
QUERIES = [
    {"query_id": "q1", "text": "kestrel clickhouse events storage", "stratum": "one"},
    {"query_id": "q2", "text": "driftwood deploy friday runbook", "stratum": "two"},
]
QRELS = [
    {"query_id": "q1", "relevant_ids": ["B"]},
    {"query_id": "q2", "relevance": {"A": 2, "C": 1}},
]


@pytest.fixture
def chunked(tmp_path: Path):
    for name, rows in (("corpus", CORPUS), ("queries", QUERIES), ("qrels", QRELS)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return load_dataset(tmp_path)


def by_query(result) -> dict[str, QueryResult]:  # type: ignore[no-untyped-def]
    return {q.query_id: q for q in result.queries}


def test_parents_ranked_at_first_chunk(chunked) -> None:  # type: ignore[no-untyped-def]
    # q1 chunks: A#1 (3), A#3 (2), A#2 (2), B#1 (1) -> parents A, B. B's chunk is 4th, past k = 2:
    # the runner searches deeper than k when chunks collapse, so B still reaches parent rank 2.
    # q2 chunks: C#1 (3), C#2 (2), s1, B#1, A#2 (1 each, ties by id descending) -> C, s1, B, A.
    result = run_benchmark(ChunkOverlapRetriever, chunked, k=2,
                           metrics=["recall@2", "precision@2", "mrr", "ndcg@2"], latency_sample=0)
    queries = by_query(result)
    assert queries["q1"].ranking == ["A", "B"]
    assert queries["q2"].ranking == ["C", "s1"]
    assert queries["q1"].scores == [3.0, 1.0]  # each parent keeps its first chunk's score
    q1, q2 = queries["q1"].metrics, queries["q2"].metrics
    assert q1["recall@2"] == pytest.approx(1.0)
    assert q1["precision@2"] == pytest.approx(0.5)
    assert q1["mrr"] == pytest.approx(0.5)
    assert q1["ndcg@2"] == pytest.approx(1 / math.log2(3), abs=1e-6)
    assert q2["recall@2"] == pytest.approx(0.5)
    assert q2["mrr"] == pytest.approx(1.0)
    # q2 gains: C (1) at rank 1; ideal: A (2) then C (1).
    assert q2["ndcg@2"] == pytest.approx(1 / (2 + 1 / math.log2(3)), abs=1e-6)
    assert result.mean("recall@2") == pytest.approx(0.75)


def test_deeper_cutoff_scores_every_parent(chunked) -> None:  # type: ignore[no-untyped-def]
    result = run_benchmark(ChunkOverlapRetriever, chunked, k=4, metrics=["recall@4", "map"], latency_sample=0)
    queries = by_query(result)
    assert queries["q2"].ranking == ["C", "s1", "B", "A"]
    assert queries["q2"].metrics["recall@4"] == pytest.approx(1.0)
    # Relevant at ranks 1 (C) and 4 (A): AP = (1/1 + 2/4) / 2.
    assert queries["q2"].metrics["map"] == pytest.approx(0.75)
    # A relevant parent is credited once, however many of its chunks were found.
    assert queries["q1"].metrics["map"] == pytest.approx(0.5)


def test_to_parents_first_occurrence_wins(chunked) -> None:  # type: ignore[no-untyped-def]
    hits = [Hit("A#2", 5.0), Hit("C#1", 4.0), Hit("A#1", 3.0), Hit("s1", 2.0), Hit("C#2", 1.0)]
    assert to_parents(hits, chunked.corpus) == [Hit("A", 5.0), Hit("C", 4.0), Hit("s1", 2.0)]
