"""The CLI as a real subprocess: `graph-explain`, and `recall-kit plugins` / `list` listing graph."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-graph"}
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "graph_cli_dataset"
    folder.mkdir()
    corpus = [
        {"id": 1, "content": "Odile Fenwick leads the Kestrel project.", "tags": "kestrel,people"},
        {"id": 2, "content": "Kestrel stores its events in ClickHouse.", "tags": "kestrel,clickhouse"},
        {"id": 3, "content": "Bread needs flour and water.", "tags": "baking"},
    ]
    queries = [{"query_id": "q1", "text": "What does Odile's project store data in?", "stratum": "multihop"}]
    qrels = [{"query_id": "q1", "relevant_ids": [1, 2]}]
    for name, rows in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_graph_explain_prints_ids_only_unless_asked(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    result = _run("graph-explain", "--dataset", str(dataset), "--query-id", "q1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "query q1 (multihop): 2 memories"
    # Odile's memory is one step from the query concept "odile"; memory 2 is reached through
    # the shared concept kestrel (c<n> ids only: concept names come from memory text).
    assert lines[1].startswith("  1. 1 ")
    assert "rel=1" in lines[1] and "-mentions-> m:1" in lines[1]
    assert lines[2].startswith("  2. 2 ")
    assert "-> m:1" in lines[2] and lines[2].endswith("-> m:2")
    assert "odile" not in result.stdout.lower() and "kestrel" not in result.stdout.lower()

    shown = _run("graph-explain", "--dataset", str(dataset), "--query-id", "q1", "--show-concepts")
    assert shown.returncode == 0, shown.stderr
    assert "[odile]" in shown.stdout and "[kestrel]" in shown.stdout


def test_graph_explain_errors_are_one_line(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    result = _run("graph-explain", "--dataset", str(dataset), "--query-id", "nope")
    assert result.returncode == 2
    assert result.stderr.strip() == f"Error: No query 'nope' in {dataset}."
    for spelled in ("graph.hops=0", "hops=0"):  # LEG.KEY=VALUE as every command takes it; KEY=VALUE too
        bad = _run("graph-explain", "--dataset", str(dataset), "--query-id", "q1", "-o", spelled)
        assert bad.returncode == 2
        assert bad.stderr.strip() == "Error: Bad options for retriever 'graph': hops must be >= 1"
    other = _run("graph-explain", "--dataset", str(dataset), "--query-id", "q1", "-o", "dense.model=x")
    assert other.returncode == 2 and "expected graph.KEY=VALUE" in other.stderr
    zero = _run("graph-explain", "--dataset", str(dataset), "--query-id", "q1", "-k", "0")
    assert zero.returncode == 2
    assert zero.stderr.strip() == "Error: --k must be at least 1, got 0."


def test_plugins_and_list_show_graph() -> None:
    result = _run("list", "retrievers", "--json")
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)
    assert [entry["name"] for entry in entries] == ["graph"]
    assert entries[0]["plugin"] == "recall-kit-graph"
    plugins = _run("plugins", "--json")
    names = [info["name"] for info in json.loads(plugins.stdout)["plugins"]]
    assert names.count("recall-kit-graph") == 1
