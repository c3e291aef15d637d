"""End to end through the real `recall-kit` command line, in subprocesses."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recall_kit import load_result

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "memories"


def recall_kit(args: list[str], plugins: str, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": plugins, "RECALL_KIT_CACHE": str(cache),
                   "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=600, check=False)


def has_distribution(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_plugins_lists_dense(tmp_path: Path) -> None:
    done = recall_kit(["plugins", "--json"], "recall-kit-dense", tmp_path)
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    dense = [plugin for plugin in listing["plugins"] if plugin["name"] == "recall-kit-dense"]
    assert len(dense) == 1 and dense[0]["registers"] == {"judges": ["combined", "embedding"], "retrievers": ["dense"]}
    assert listing["errors"] == {}
    done = recall_kit(["list", "retrievers", "--json"], "recall-kit-dense", tmp_path)
    assert done.returncode == 0, done.stderr
    assert [(row["name"], row["plugin"]) for row in json.loads(done.stdout)] == [
        ("dense", "recall-kit-dense")]


def write_tiny_dataset(folder: Path) -> Path:
    folder.mkdir()
    corpus = [{"id": 1, "content": "The cat sleeps on the windowsill."},
              {"id": 2, "content": "Quarterly revenue grew eight percent."}]
    queries = [{"query_id": "q1", "text": "kitten napping", "stratum": "paraphrase"}]
    qrels = [{"query_id": "q1", "relevant_ids": [1]}]
    for name, rows in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_an_unknown_model_offline_is_one_line_and_exit_2(tmp_path: Path) -> None:
    dataset = write_tiny_dataset(tmp_path / "tiny")
    done = recall_kit(
        ["eval", "-d", str(dataset), "-r", "dense", "-o", "dense.model=no-such-org/no-such-model-2718"],
        "recall-kit-dense", tmp_path / "cache", HF_HUB_CACHE=str(tmp_path / "empty-hub"),
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: Model 'no-such-org/no-such-model-2718' is not available offline")
    assert "Traceback" not in done.stderr


def test_a_folder_that_is_not_a_model_is_one_line(tmp_path: Path) -> None:
    dataset = write_tiny_dataset(tmp_path / "tiny")
    done = recall_kit(["eval", "-d", str(dataset), "-r", "dense", "-o", f"dense.model={dataset}"],
                      "recall-kit-dense", tmp_path / "cache")
    assert done.returncode == 2
    expected = (
        f"Error: {str(dataset)!r} is not a sentence-transformers model folder (it has no "
        "modules.json or config.json); pass a folder saved with SentenceTransformer.save() or a "
        "model name."
    )
    assert done.stderr.strip().splitlines() == [expected]


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory: pytest.TempPathFactory, with_exports: Callable[[Path], Path]) -> dict[str, Any]:
    if not (EXAMPLES / "corpus.jsonl").exists():
        pytest.skip("examples/memories is not there")
    folder = tmp_path_factory.mktemp("dense-e2e")
    cache = with_exports(folder / "cache")
    runs: dict[str, Any] = {}
    names = [("dense", "dense-first"), ("dense", "dense-second")]
    if has_distribution("recall-kit-fts5"):
        names.append(("fts5", "fts5"))
    for retriever, label in names:
        out = folder / f"{label}.json"
        done = recall_kit(
            ["eval", "-d", str(EXAMPLES), "-r", retriever, "--json", str(out), "-k", "10",
             "-m", "recall@10", "--latency-sample", "5"],
            "recall-kit-dense,recall-kit-fts5", cache,
        )
        assert done.returncode == 0, done.stderr
        runs[label] = load_result(out)
        runs[f"{label} printed"] = done.stdout
    return runs


def test_a_second_eval_hits_the_cache(example_runs: dict[str, Any]) -> None:
    first_run, second_run = example_runs["dense-first"], example_runs["dense-second"]
    first, second = first_run.index.legs["dense"], second_run.index.legs["dense"]
    memories = first_run.dataset.memories
    assert memories is not None and memories > 0 and first.stats["memories"] == memories
    assert (first.stats["cache"], first.stats["cache_hit"], first.stats["embedded_memories"]) == ("miss", False, memories)
    assert (second.stats["cache"], second.stats["cache_hit"], second.stats["embedded_memories"]) == ("hit", True, 0)
    assert first.size_bytes == second.size_bytes == memories * 384 * 4
    assert all(first_run.means(stratum) == second_run.means(stratum) for stratum in [None, *first_run.strata])
    assert first_run.per_query("recall@10") == second_run.per_query("recall@10")


def test_dense_beats_fts5_on_paraphrases(example_runs: dict[str, Any]) -> None:
    if "fts5" not in example_runs:
        pytest.skip("recall-kit-fts5 is not installed")
    dense = example_runs["dense-first"].mean("recall@10", "paraphrase")
    fts5 = example_runs["fts5"].mean("recall@10", "paraphrase")
    assert dense > fts5


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_a_dense_run_leaves_nothing_in_tmpdir(backend: str, tmp_path: Path, with_exports: Callable[[Path], Path]) -> None:
    # Issue 32: torch left `torchinductor_<user>` in TMPDIR; it now lives in recall-kit's cache.
    # onnxruntime's telemetry wrote a session file (.ses) there; it is turned off.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    data = tmp_path / "d"
    data.mkdir()
    (data / "corpus.jsonl").write_text('{"id": 1, "content": "oat milk in coffee"}\n{"id": 2, "content": "door code"}\n')
    (data / "queries.jsonl").write_text('{"query_id": "q1", "text": "milk"}\n')
    (data / "qrels.jsonl").write_text('{"query_id": "q1", "relevant_ids": [1]}\n')
    done = recall_kit(["eval", "-d", str(data), "-r", "dense", "--latency-sample", "1", "--metrics", "recall@5",
                       "-o", f"dense.backend={backend}"], "recall-kit-dense", with_exports(tmp_path / "cache"),
                      TMPDIR=str(scratch))
    assert done.returncode == 0, done.stderr
    assert list(scratch.iterdir()) == []


def test_the_throughput_line_says_whether_query_embeddings_came_from_the_cache(example_runs: dict[str, Any]) -> None:
    """The batch throughput of a second eval over the same questions is a cache read: the cost
    table's line says so, and how to measure it cold; the first eval's line says it was cold."""
    first, second = (example_runs[name] for name in ("dense-first", "dense-second"))
    assert first.index.legs["dense"].stats["cached_query_embeddings"] == 0
    assert second.index.legs["dense"].stats["cached_query_embeddings"] == 120
    def throughput(label: str) -> str:  # the cost table's line as `eval` printed it
        return next(line for line in example_runs[f"{label} printed"].splitlines() if "batch throughput" in line)

    assert throughput("dense-first").endswith("queries/s (cold: every query embedded)")
    assert throughput("dense-second").endswith(
        "queries/s (with the query-embedding cache: dense 120 of 120 read from it; "
        "-o dense.query_cache=false measures it cold)")
    if "fts5" in example_runs:
        assert "cold" not in throughput("fts5")  # a leg that embeds nothing says nothing
