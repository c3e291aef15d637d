"""`recall-kit pool`: unjudged ids from the union of systems' top-depth rankings, ids only unless asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit.dataset import load_dataset
from recall_kit.errors import OptionError, ResultFileError
from recall_kit.measure.result import SCHEMA

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    memories = [{"id": i, "content": f"secret memory number {i}"} for i in range(1, 8)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(m) + "\n" for m in memories))
    queries = [{"query_id": "qa", "text": "private question a", "stratum": "s"},
               {"query_id": "qb", "text": "private question b", "stratum": "s"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    qrels = [{"query_id": "qa", "relevance": {"1": 1, "2": 0}}, {"query_id": "qb", "relevant_ids": [3, 4, 5]}]
    (folder / "qrels.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qrels))
    return folder


def write_result(path: Path, dataset_dir: Path, label: str, rankings: dict[str, list[str]]) -> Path:
    dataset = load_dataset(dataset_dir)
    data = {
        "schema": SCHEMA, "system": {"spec": label, "label": label}, "k": 10,
        "dataset": {"name": "data", "fingerprint": dataset.fingerprint, "path": str(dataset_dir)},
        "metrics": {"names": [], "overall": {"n": 2}, "strata": {}},
        "queries": [{"query_id": q, "stratum": "s", "ranking": r, "scores": [float(len(r) - i) for i in range(len(r))], "metrics": {}, "found_by": {}}
                    for q, r in rankings.items()],
        "latency_ms": {"n": 0}, "warnings": [],
    }
    path.write_text(json.dumps(data))
    return path


def _pool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recall_kit", "pool", *args], check=False, cwd=ROOT,
                          env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""}, capture_output=True, text=True,
                          timeout=120)


def test_pool_by_hand(dataset_dir, tmp_path):
    # qa judges 1 (relevant) and 2 (not relevant); qb judges 3, 4, 5.
    a = write_result(tmp_path / "a.json", dataset_dir, "A", {"qa": ["1", "6", "7", "2"], "qb": ["3", "4", "5"]})
    b = write_result(tmp_path / "b.json", dataset_dir, "B", {"qa": ["7", "2", "1", "6"], "qb": ["3", "4", "6"]})
    out = tmp_path / "pool.jsonl"
    done = _pool(str(a), str(b), "--depth", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # qa at depth 3: A gives 6 (rank 2), 7 (rank 3); B gives 7 (rank 1). 7's best rank is 1.
    # qb at depth 3: only B's 6 (rank 3) is unjudged.
    assert rows == [
        {"query_id": "qa", "doc_ids": ["7", "6"], "systems": {"7": ["A", "B"], "6": ["A"]}},
        {"query_id": "qb", "doc_ids": ["6"], "systems": {"6": ["B"]}},
    ]
    # Ids only: no text of any memory or query appears in the file or on the screen.
    assert "secret" not in out.read_text() and "private" not in out.read_text()
    assert "secret" not in done.stdout + done.stderr
    # A: 6 ids in its top 3 over the two queries, 2 unjudged; B: 6 ids, 2 unjudged (7 and 6).
    assert "33.3%" in done.stdout


def test_pool_with_text_only_on_request(dataset_dir, tmp_path):
    a = write_result(tmp_path / "a.json", dataset_dir, "A", {"qa": ["6"], "qb": ["3"]})
    out = tmp_path / "pool.jsonl"
    done = _pool(str(a), "--out", str(out), "--with-text")
    assert done.returncode == 2 and "--dataset" in done.stderr
    done = _pool(str(a), "--out", str(out), "--with-text", "--dataset", str(dataset_dir))
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["texts"] == {"6": "secret memory number 6"} and row["query_text"] == "private question a"


def test_pool_refuses_changed_judgments(dataset_dir, tmp_path):
    from recall_kit.curate.pool import pool_files

    a = write_result(tmp_path / "a.json", dataset_dir, "A", {"qa": ["6"], "qb": ["3"]})
    qrels = dataset_dir / "qrels.jsonl"
    qrels.write_text(qrels.read_text().replace('"2": 0', '"2": 0, "6": 1'))  # someone judged 6
    with pytest.raises(ResultFileError, match="different version"):
        pool_files([a], tmp_path / "p.jsonl")
    with pytest.raises(OptionError):
        pool_files([a], tmp_path / "p.jsonl", depth=0, dataset_path=dataset_dir)
