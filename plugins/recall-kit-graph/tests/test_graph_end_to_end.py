"""End to end on examples/memories, as real `python -m recall_kit eval` subprocesses: adding the
graph leg to fts5+dense (rrf) raises multihop recall@10, and the graph leg alone finds a relevant
multihop memory that neither fts5 nor dense returns in its top 50."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit import BenchmarkResult, load_result

ROOT = Path(__file__).resolve().parents[3]
DATASET = ROOT / "examples" / "memories"
PLUGINS = "recall-kit-fts5,recall-kit-dense,recall-kit-fusion,recall-kit-graph"


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    not all(_installed(name) for name in PLUGINS.split(",")) or not (DATASET / "qrels.jsonl").exists(),
    reason="needs examples/memories and recall-kit-fts5, -dense, -fusion, -graph installed",
)


def _eval(out: Path, retriever: str, k: int, *extra: str) -> BenchmarkResult:
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": PLUGINS}
    command = [sys.executable, "-m", "recall_kit", "eval", "--dataset", str(DATASET),
               "--retriever", retriever, "--k", str(k), "--metrics", "recall@10",
               "--latency-sample", "0", "--no-progress", "--json", str(out), *extra]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
                            check=False)
    assert result.returncode == 0, result.stderr
    return load_result(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BenchmarkResult]:
    folder = tmp_path_factory.mktemp("graph_end_to_end")
    return {
        "fused": _eval(folder / "fused.json", "fts5+dense", 10, "--fusion", "rrf"),
        "fused_graph": _eval(folder / "fused_graph.json", "fts5+dense+graph", 10, "--fusion", "rrf"),
        "fts5": _eval(folder / "fts5.json", "fts5", 50),
        "dense": _eval(folder / "dense.json", "dense", 50),
        "graph": _eval(folder / "graph.json", "graph", 50),
    }


def _relevant() -> dict[str, set[str]]:
    relevant: dict[str, set[str]] = {}
    for line in (DATASET / "qrels.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "relevant_ids" in row:
            ids = {str(doc) for doc in row["relevant_ids"]}
        else:
            ids = {doc for doc, grade in row["relevance"].items() if grade >= 1}
        relevant[row["query_id"]] = ids
    return relevant


def test_graph_raises_multihop_recall_at_10(runs: dict[str, BenchmarkResult]) -> None:
    without = runs["fused"].mean("recall@10", stratum="multihop")
    with_graph = runs["fused_graph"].mean("recall@10", stratum="multihop")
    print(f"multihop recall@10: fts5+dense {without:.4f}, fts5+dense+graph {with_graph:.4f}")
    assert with_graph > without


def test_graph_alone_finds_what_neither_other_leg_does(runs: dict[str, BenchmarkResult]) -> None:
    relevant = _relevant()
    rankings = {name: runs[name].rankings() for name in ("fts5", "dense", "graph")}
    graph_only = []
    for query in runs["graph"].queries:
        if query.stratum != "multihop":
            continue
        qid = query.query_id
        others = set(rankings["fts5"][qid][:50]) | set(rankings["dense"][qid][:50])
        graph_only += [(qid, doc) for doc in rankings["graph"][qid][:50]
                       if doc in relevant[qid] and doc not in others]
    print(f"relevant multihop memories only the graph leg returns in its top 50: {graph_only}")
    assert graph_only
