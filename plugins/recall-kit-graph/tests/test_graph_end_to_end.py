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


SYSTEMS = {  # name: (retriever, fusion)
    "fused": ("fts5+dense", "rrf"),
    "fused_graph": ("fts5+dense+graph", "rrf"),
    "fts5": ("fts5", None),
    "dense": ("dense", None),
    "graph": ("graph", None),
}


def _eval(folder: Path, names: list[str], k: int) -> dict[str, BenchmarkResult]:
    """One `eval` process for several systems (one --config each, legs they share searched once:
    the dense model loads once), each result read from --out-dir."""
    configs = []
    for name in names:
        retriever, fusion = SYSTEMS[name]
        config = folder / f"{name}.toml"
        config.write_text(f'[system]\nretriever = "{retriever}"\n' + (f'fusion = "{fusion}"\n' if fusion else ""))
        configs += ["--config", str(config)]
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": PLUGINS}
    command = [sys.executable, "-m", "recall_kit", "eval", "--dataset", str(DATASET), *configs,
               "--k", str(k), "--metrics", "recall@10", "--latency-sample", "0", "--no-progress",
               "--out-dir", str(folder / f"k{k}")]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
                            check=False)
    assert result.returncode == 0, result.stderr
    return {name: load_result(folder / f"k{k}" / f"{name}.json") for name in names}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BenchmarkResult]:
    """The two fused systems scored at 10, each leg alone at 50 (two processes)."""
    folder = tmp_path_factory.mktemp("graph_end_to_end")
    return {**_eval(folder, ["fused", "fused_graph"], 10), **_eval(folder, ["fts5", "dense", "graph"], 50)}


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
