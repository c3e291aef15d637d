"""`[judging] sample = N` (recall_kit.study.steps.judgments): the unjudged pairs ordered by how far their label
can move a decision delta, then the rest of the pool, each once; a sample of them stratified by the
query's stratum in that order. (A model judge grading such a sample: tests/study/test_people.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from study_support import EXAMPLE

from recall_kit.dataset import load_dataset
from recall_kit.measure.run.runner import run_benchmark
from recall_kit.measure.systems.system import SystemSpec
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.pipeline.graph import StudyGraph
from recall_kit.study.steps.judgments import SampleReads, ordered_pairs, stratified
from recall_kit.study.steps.pool import PoolReads, make_pool


def test_a_stratified_sample_keeps_each_strata_share_and_the_order() -> None:
    pairs = [("a1", "x"), ("b1", "x"), ("a2", "x"), ("a3", "x"), ("b2", "x"), ("a4", "x")]
    strata = {"a1": "A", "a2": "A", "a3": "A", "a4": "A", "b1": "B", "b2": "B"}
    assert stratified(pairs, strata, 3) == [("a1", "x"), ("b1", "x"), ("a2", "x")]
    assert stratified(pairs, strata, 10) == pairs


def test_the_largest_remainders_take_the_last_places_ties_by_stratum_name() -> None:
    # A: 3 pairs, B: 3, C: 1 of 7; 4 places: quotas 1.71, 1.71, 0.57 -> 1, 1, 0 and two left, by the
    # largest remainders (A and B tie at 0.71; C's 0.57 is next)
    pairs = [("a1", "1"), ("a2", "1"), ("a3", "1"), ("b1", "1"), ("b2", "1"), ("b3", "1"), ("c1", "1")]
    strata = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "b3": "B", "c1": "C"}
    assert stratified(pairs, strata, 4) == [("a1", "1"), ("a2", "1"), ("b1", "1"), ("b2", "1")]
    assert stratified(pairs, strata, 5) == [("a1", "1"), ("a2", "1"), ("b1", "1"), ("b2", "1"), ("c1", "1")]
    assert stratified(pairs, strata, 0) == []
    # a query no stratum names is one stratum of its own ("")
    assert stratified([("x", "1"), ("a1", "1")], {"a1": "A"}, 1) == [("x", "1")]


def test_the_ordered_pairs_are_the_pools_unjudged_pairs_each_once_those_that_decide_first(
        tmp_path: Path, overlap_plugin: object) -> None:
    graph = StudyGraph(tmp_path / "out", [])
    evaluation = graph.path("evaluation-set")
    shutil.copytree(EXAMPLE, evaluation)
    dataset = load_dataset(evaluation)
    systems = {"loose": SystemSpec("overlap"), "strict": SystemSpec("overlap", options={"overlap": {"min_overlap": 2}})}
    for name, spec in systems.items():
        graph.path(f"run/{name}").mkdir(parents=True)
        run_benchmark(spec, dataset, k=5, metrics=["recall@5"], latency_sample=0, seed=0,
                      show_progress=False).save(graph.path(f"run/{name}") / "result.json")
    graph.path("pool").mkdir()
    make_pool(PoolReads(list(systems), depth=5, hook_k=5), Artefacts(lambda: graph, "pool", ["evaluation-set", "run/loose",
                                                                                             "run/strict"]),
              graph.path("pool"))
    pooled = [(row["query_id"], doc) for row in map(json.loads, (graph.path("pool") / "pool.jsonl").read_text().splitlines())
              for doc in row["doc_ids"]]
    assert pooled
    reads = SampleReads(size=3, systems=list(systems), baseline="loose", decision=["recall@5"], resamples=200, seed=0)
    artefacts = Artefacts(lambda: graph, "judgments", ["evaluation-set", "pool", "run/loose", "run/strict"])
    order = ordered_pairs(reads, artefacts)
    assert len(order) == len(set(order)) and set(pooled) <= set(order)
    assert all(doc not in dataset.qrels.get(query, {}) for query, doc in order)  # unjudged, every one
    assert order == ordered_pairs(reads, artefacts)  # seeded: the same order again
    # first the pairs that can move a decision row, heaviest first (not the pool's order), then the
    # rest of the pool in its own order
    head = min(index for index in range(len(order) + 1)
               if order[index:] == [pair for pair in pooled if pair not in order[:index]])
    assert 0 < head < len(order)
    assert order[:head] != [pair for pair in pooled if pair in set(order[:head])]
