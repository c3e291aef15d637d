"""The `mem0` retriever: mem0's Memory with the packaged MiniLM and local Qdrant, no network."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import recall_kit_mem0
from recall_kit_mem0 import Mem0Retriever
from recall_kit_mem0.retriever import _Store, bundled_model_path

from recall_kit import SystemSpec, load_dataset, run_benchmark
from recall_kit.testing import RetrieverConformance, registered_plugin, sample_corpus, write_scoped_dataset


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every attempt to open a network connection or resolve a name is recorded and refused."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args[1:] if args and isinstance(args[0], socket.socket) else args)
        raise OSError("network refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    yield attempts


def test_fills_and_searches_with_no_network_and_no_key(no_network: list[Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """From the import of mem0 on: no connection, no name lookup, no API key in the environment."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _Store._stores.clear()  # a fresh Memory: its construction happens under the guard too
    corpus = sample_corpus()
    retriever = Mem0Retriever()
    retriever.build_index(corpus)
    hits = retriever.search("rotate the Driftwood API keys", 3)
    assert hits[0].id == "4"
    assert no_network == []


def test_ranks_as_cosine_over_the_same_model() -> None:
    """An independent ranking: sentence-transformers embeddings of each memory's content and the
    query, cosine similarity, best first. mem0 (infer=False, no BM25 or entity signals installed)
    must give the same order and the same scores."""
    from sentence_transformers import SentenceTransformer

    corpus = sample_corpus()
    model = SentenceTransformer(bundled_model_path(), device="cpu")
    documents = model.encode([memory.content for memory in corpus], normalize_embeddings=True)
    retriever = Mem0Retriever()
    retriever.build_index(corpus)
    for query in corpus.queries:
        vector = model.encode([query.text], normalize_embeddings=True)[0]
        cosine = documents @ vector
        order = np.argsort(-cosine, kind="stable")[:5]
        hits = retriever.search(query.text, 5)
        assert [hit.id for hit in hits] == [corpus[int(i)].id for i in order], query.query_id
        assert [hit.score for hit in hits] == pytest.approx([float(cosine[i]) for i in order], abs=1e-5)


def test_memories_are_embedded_in_batches_not_one_call_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """Filling the index runs the model once per batch of memories (mem0 alone: once per memory);
    a query is still embedded by mem0's own `embed`, and the embedder is left as it was."""
    corpus = sample_corpus()
    embedder = _Store.get(bundled_model_path(), "qdrant").memory.embedding_model
    encode = embedder.model.encode
    calls: list[int] = []

    def counted(texts: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1 if isinstance(texts, str) else len(texts))
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(embedder.model, "encode", counted)
    retriever = Mem0Retriever()
    retriever.build_index(corpus)
    assert len(corpus) > 1 and calls == [len({memory.content for memory in corpus})]
    assert "embed" not in vars(embedder)
    assert retriever.search("rotate the Driftwood API keys", 3)[0].id == "4" and calls[1:] == [1]


def test_scopes_are_mem0_users(tmp_path: Path) -> None:
    """Two scopes, one index each: a query sees only its scope's memories."""
    write_scoped_dataset(tmp_path)
    with registered_plugin(recall_kit_mem0):
        result = run_benchmark(SystemSpec(retriever="mem0"), load_dataset(str(tmp_path)), k=3,
                               latency_sample=0, show_progress=False)
    rankings = result.rankings()
    assert rankings["qa"][0] == "a1" and set(rankings["qa"]) == {"a1", "a2"}
    assert rankings["qb"] == ["b1"]


class TestMem0Conformance(RetrieverConformance):
    retriever_factory = Mem0Retriever
    score_rel_tolerance = 1e-5


def _run_mem0(tmp_path: Path, *options: str) -> tuple[Any, Path]:
    """recall-kit eval with the mem0 leg as a real process, its TMPDIR a fresh folder of its own."""
    import os
    import subprocess
    import sys

    from recall_kit.testing import write_sample_dataset

    dataset = write_sample_dataset(tmp_path / "sample")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("MEM0_DIR", "RECALL_KIT_DEBUG")}
    env.update(TMPDIR=str(tmp), RECALL_KIT_LOAD_PLUGINS="recall-kit-mem0", RECALL_KIT_CACHE=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, "-m", "recall_kit", "eval", "-d", str(dataset), "-r", "mem0", *options,
                             "--json", str(tmp_path / "r.json"), "--latency-sample", "0"],
                            env=env, capture_output=True, text=True, timeout=600, check=False)
    return result, tmp


def _said(stderr: str) -> list[str]:
    """stderr without the progress display's lines."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("recall-kit: ")]


def test_a_run_prints_no_notices_and_leaves_nothing_in_tmpdir(tmp_path: Path) -> None:
    """mem0's spaCy and fastembed notices and transformers' loading bar stay off stderr; mem0's
    config.json (MEM0_DIR) and torch's compiler cache are not left in TMPDIR."""
    result, tmp = _run_mem0(tmp_path)
    assert result.returncode == 0, result.stderr
    assert _said(result.stderr) == [f"Wrote {tmp_path / 'r.json'}"], result.stderr
    assert sorted(path.name for path in tmp.iterdir()) == []


def test_a_model_mem0_cannot_load_is_one_line_naming_the_option(tmp_path: Path) -> None:
    """A folder with a config.json that is not a model, and one whose embedding size is not a
    number: one line naming mem0.model, exit 2, no result, nothing left in TMPDIR."""
    for name, config in (("not-a-model", '{"hidden_size": 384}'), ("no-size", '{"hidden_size": "large"}')):
        model = tmp_path / name
        model.mkdir()
        (model / "config.json").write_text(config)
        result, tmp = _run_mem0(tmp_path / f"run-{name}", "-o", f"mem0.model={model}")
        said = _said(result.stderr)
        assert result.returncode == 2 and len(said) == 1, result.stderr
        assert said[0].startswith(f"Error: mem0.model '{model}'") and "unexpected" not in said[0], said
        assert not (tmp_path / f"run-{name}" / "r.json").exists()
        assert sorted(path.name for path in tmp.iterdir()) == []
