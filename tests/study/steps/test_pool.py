"""The pool step (recall_kit.study.steps.pool): every system's unjudged top ids, and the unjudged share
at the hook's k; one command reproduces it."""

from __future__ import annotations

import json
from pathlib import Path

from study.steps.test_corpus import evaluation_set  # tests/ is on sys.path (conftest.py)

from recall_kit.dataset import load_dataset
from recall_kit.measure.run.runner import run_benchmark
from recall_kit.measure.systems.system import SystemSpec
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import read_output
from recall_kit.study.steps.pool import PoolOutput, PoolReads, make_pool, pool_command


def test_the_pool_holds_each_systems_unjudged_top_ids(tmp_path: Path, overlap_plugin: object) -> None:
    graph = evaluation_set(tmp_path)
    dataset = load_dataset(graph.path("evaluation-set"))
    run = graph.path("run/overlap")
    run.mkdir(parents=True)
    result = run_benchmark(SystemSpec("overlap"), dataset, k=5, metrics=["recall@5"], latency_sample=0, seed=0,
                           show_progress=False)
    result.save(run / "result.json")
    folder = graph.path("pool")
    folder.mkdir()
    reads = PoolReads(["overlap"], depth=5, hook_k=2)
    make_pool(reads, Artefacts(lambda: graph, "pool", ["evaluation-set", "run/overlap"]), folder)
    rows = [json.loads(line) for line in (folder / "pool.jsonl").read_text().splitlines()]
    judged = {query: set(grades) for query, grades in dataset.qrels.items()}
    pooled = {(row["query_id"], doc) for row in rows for doc in row["doc_ids"]}
    returned = {(query, doc) for query, ranking in result.rankings().items() for doc in ranking[:5]}
    assert pooled == {(query, doc) for query, doc in returned if doc not in judged.get(query, set())}
    summary = read_output(PoolOutput, folder / "pool.json")
    assert (summary.depth, summary.ids, summary.queries) == (5, len(pooled), len(rows))
    at_hook = [(query, doc) for query, ranking in result.rankings().items() for doc in ranking[:2]]
    unjudged = sum(1 for query, doc in at_hook if doc not in judged.get(query, set()))
    assert summary.unjudged_share_at_hook_k == {"overlap": round(unjudged / len(at_hook), 4)}
    assert pool_command(reads, tmp_path) == ("recall-kit pool steps/run/overlap/result.json --depth 5 "
                                             "--dataset steps/evaluation-set --out pool.jsonl")
