"""The embedding cache: hits skip embedding, and a corrupt or mismatched file is rebuilt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from recall_kit_dense.cache import EmbeddingCache, cache_folder
from recall_kit_dense.retriever import DenseRetriever

from recall_kit.plugin import Corpus, Memory

MEMORIES = [
    Memory("10", "Dentist appointment moved to Thursday at 3pm.", category="health"),
    Memory("11", "The garage door code is the year we moved in.", category="home"),
    Memory("12", "Mia prefers oat milk in her coffee.", category="people"),
]


class CountingRetriever(DenseRetriever):
    """A real subclass that records every batch of memory texts it embeds."""

    def __init__(self, options: object = None) -> None:
        super().__init__(options)
        self.embedded: list[int] = []

    def _embed_documents(self, texts: list[str]) -> np.ndarray:
        self.embedded.append(len(texts))
        return super()._embed_documents(texts)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_exports: Callable[[Path], Path]) -> Path:
    monkeypatch.setenv("RECALL_KIT_CACHE", str(with_exports(tmp_path / "cache")))
    return tmp_path / "cache" / "dense"


def build(corpus: Corpus, **options: object) -> CountingRetriever:
    retriever = CountingRetriever(DenseRetriever.Options(**options))  # type: ignore[arg-type]
    retriever.build_index(corpus)
    return retriever


def files(folder: Path) -> tuple[Path, Path]:
    arrays = sorted(folder.glob("*.npy"))
    sidecars = sorted(folder.glob("*.json"))
    assert len(arrays) == 1 and len(sidecars) == 1
    return arrays[0], sidecars[0]


def test_cache_folder_follows_recall_kit_cache(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache_folder() == folder
    monkeypatch.delenv("RECALL_KIT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert cache_folder() == Path("/somewhere/cache/recall-kit/dense")


def test_second_build_is_a_hit_and_embeds_nothing(folder: Path) -> None:
    corpus = Corpus(MEMORIES)
    first = build(corpus)
    assert first.embedded == [3]
    assert first.index_stats()["cache"] == "miss"
    _, sidecar_path = files(folder)
    sidecar = json.loads(sidecar_path.read_text())
    assert sidecar["shape"] == [3, 384] and sidecar["dtype"] == "float32"
    assert sidecar["key"]["corpus"] == corpus.fingerprint
    assert "Dentist" not in sidecar_path.read_text()  # no memory text in the sidecar
    second = build(Corpus(MEMORIES))
    assert second.embedded == []
    stats = second.index_stats()
    assert (stats["cache"], stats["cache_hit"], stats["embedded_memories"]) == ("hit", True, 0)
    assert stats["truncated_memories"] == 0  # carried in the sidecar
    assert np.array_equal(first.embeddings, second.embeddings)
    assert [h.id for h in second.search("oat milk", 3)] == [h.id for h in first.search("oat milk", 3)]


def test_garbage_in_the_array_file_is_detected_and_rebuilt(folder: Path) -> None:
    corpus = Corpus(MEMORIES)
    reference = build(corpus).embeddings
    array_path, _ = files(folder)
    array_path.write_bytes(b"this is not a numpy file")
    rebuilt = build(corpus)
    assert rebuilt.embedded == [3] and rebuilt.index_stats()["cache"] == "corrupt"
    np.testing.assert_allclose(rebuilt.embeddings, reference, atol=1e-6)
    assert build(corpus).index_stats()["cache"] == "hit"  # the rebuild was written back


def test_a_valid_array_with_changed_numbers_fails_its_checksum(folder: Path) -> None:
    corpus = Corpus(MEMORIES)
    build(corpus)
    array_path, _ = files(folder)
    array = np.load(array_path)
    array[0, 0] += 0.5
    np.save(array_path, array)
    again = build(corpus)
    assert again.embedded == [3] and again.index_stats()["cache"] == "corrupt"
    assert again.embeddings is not None and abs(float(np.linalg.norm(again.embeddings[0])) - 1) < 1e-5


@pytest.mark.parametrize("damage", ["key", "format", "not an object"])
def test_a_sidecar_with_another_key_is_a_mismatch_and_rebuilt_with_a_warning(
        folder: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    # Issue 37: a mismatched entry was re-embedded without a word (one line, no text).
    corpus = Corpus(MEMORIES)
    build(corpus)
    _, sidecar_path = files(folder)
    sidecar = json.loads(sidecar_path.read_text())
    if damage == "key":
        sidecar["key"]["model"] = "some/other-model"
    elif damage == "format":
        sidecar["format"] = 99
    else:
        sidecar = [sidecar]
    sidecar_path.write_text(json.dumps(sidecar))
    capsys.readouterr()
    again = build(corpus)
    assert again.embedded == [3] and again.index_stats()["cache"] == "mismatch"
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [f"recall-kit-dense: the embedding cache for this corpus under {folder} does not match what "
                    "was asked for (its sidecar's key or format, or the array's shape); re-embedding."]
    assert build(corpus).index_stats()["cache"] == "hit"


def test_a_damaged_query_cache_entry_is_said_once(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = Corpus(MEMORIES)
    retriever = build(corpus)
    expected = retriever.search_many(["oat milk", "garage"], 3)
    queries = [path for path in folder.glob("*.json") if json.loads(path.read_text())["key"].get("kind") == "queries"]
    assert len(queries) == 1
    array_path = queries[0].with_suffix(".npy")
    array_path.write_bytes(array_path.read_bytes()[:100])
    capsys.readouterr()
    assert retriever.search_many(["oat milk", "garage"], 3) == expected
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("recall-kit-dense: the embedding cache for these queries under")
    assert "oat" not in said[0]


def test_a_truncated_sidecar_is_corrupt(folder: Path) -> None:
    corpus = Corpus(MEMORIES)
    build(corpus)
    _, sidecar_path = files(folder)
    sidecar_path.write_text(sidecar_path.read_text()[:20])
    assert build(corpus).index_stats()["cache"] == "corrupt"


@pytest.mark.parametrize(
    ("change", "options"),
    [
        ("edited memory", {}),
        ("reordered corpus", {}),
        ("doc prefix", {"doc_prefix": "passage: "}),
        ("fields", {"fields": ("content",)}),
        ("window", {"max_seq_length": 64}),
    ],
)
def test_anything_the_vectors_depend_on_changes_the_key(
    folder: Path, change: str, options: dict[str, object]
) -> None:
    build(Corpus(MEMORIES))
    memories = list(MEMORIES)
    if change == "edited memory":
        memories[1] = Memory("11", "The garage door code changed.", category="home")
    if change == "reordered corpus":
        memories.reverse()
    changed = build(Corpus(memories), **options)
    assert changed.embedded == [3] and changed.index_stats()["cache"] == "miss"
    assert len(list(folder.glob("*.npy"))) == 2
    if change == "reordered corpus":  # rows follow the new order
        assert changed.search("coffee preference", 1)[0].id == "12"


def test_the_query_prefix_does_not_invalidate_corpus_vectors(folder: Path) -> None:
    build(Corpus(MEMORIES))
    assert build(Corpus(MEMORIES), query_prefix="find: ").index_stats()["cache"] == "hit"


def test_cache_off_writes_nothing(folder: Path) -> None:
    retriever = build(Corpus(MEMORIES), cache=False)
    assert retriever.index_stats()["cache"] == "disabled" and retriever.embedded == [3]
    # No embeddings; the folder holds only the model's ONNX export (a model file, as assembled models are).
    assert [path.name for path in folder.iterdir()] == ["onnx"]


def test_an_unwritable_cache_folder_does_not_stop_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("RECALL_KIT_CACHE", str(blocker))  # the cache folder would be under a file
    retriever = build(Corpus(MEMORIES))
    assert retriever.index_stats()["cache"] == "miss (not written)"
    assert retriever.search("dentist", 1)[0].id == "10"
    said = capsys.readouterr().err
    assert "could not write the embedding cache" in said
    # Nor the model's ONNX export: said in one line, and the run is on torch.
    assert retriever.index_stats()["backend"] == "torch" and "could not write the ONNX export" in said


def test_store_leaves_no_temporary_files(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    key = {"k": 1}
    cache.store(key, np.eye(3, dtype=np.float32), {"truncated_memories": 0})
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".npy"]
    lookup = cache.load(key)
    assert lookup.hit and lookup.array is not None and np.array_equal(lookup.array, np.eye(3))
    assert cache.load({"k": 2}).status == "miss"


def test_all_nan_vectors_with_a_matching_checksum_are_corrupt(folder: Path) -> None:
    # The sidecar agrees with the file (checksum recomputed), but the numbers are not vectors:
    # reused, they gave all-zero metrics and no warning.
    from recall_kit_dense.cache import array_checksum

    corpus = Corpus(MEMORIES)
    reference = build(corpus)
    array_path, sidecar_path = files(folder)
    array = np.full_like(np.load(array_path), np.nan)
    np.save(array_path, array)
    sidecar = json.loads(sidecar_path.read_text())
    sidecar["sha256"] = array_checksum(np.load(array_path))
    sidecar_path.write_text(json.dumps(sidecar))
    again = build(corpus)
    assert again.embedded == [3] and again.index_stats()["cache"] == "corrupt"
    assert [h.id for h in again.search("oat milk", 3)] == [h.id for h in reference.search("oat milk", 3)]


def test_a_query_with_a_lone_surrogate_is_answered(folder: Path) -> None:
    retriever = build(Corpus(MEMORIES))
    hits = retriever.search("oat milk \ud800", 3)  # a TypeError in the tokenizer before
    assert len(hits) == 3 and all(np.isfinite(h.score) for h in hits)
    assert [h.id for h in retriever.search_many(["\udfff", "oat milk"], 2)[1]][0] == "12"


class QueryCountingRetriever(DenseRetriever):
    """A real subclass that records every batch of query texts it embeds."""

    def __init__(self, options: object = None) -> None:
        super().__init__(options)
        self.query_batches: list[int] = []

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        self.query_batches.append(len(texts))
        return super()._embed_queries(texts)


QUERIES = ["When is the dentist?", "What milk does Mia like?"]


def test_a_repeated_query_batch_is_read_from_the_cache(folder: Path) -> None:
    first = QueryCountingRetriever()
    first.build_index(Corpus(MEMORIES))
    answers = first.search_many(QUERIES, 2)
    assert first.query_batches == [2]
    again = QueryCountingRetriever()
    again.build_index(Corpus(MEMORIES))
    assert again.search_many(QUERIES, 2) == answers
    assert again.query_batches == []  # nothing embedded: the vectors came from the cache
    # Another batch is another key; the sidecars hold a digest of the texts, never the texts.
    again.search_many(QUERIES[:1], 2)
    assert again.query_batches == [1]
    assert len(list(folder.glob("*.npy"))) == 3  # the corpus and two query batches
    sidecars = " ".join(path.read_text() for path in folder.glob("*.json"))
    assert "dentist" not in sidecars and "Mia" not in sidecars


def test_query_cache_off_embeds_every_batch(folder: Path) -> None:
    retriever = QueryCountingRetriever(DenseRetriever.Options(query_cache=False))
    retriever.build_index(Corpus(MEMORIES))
    retriever.search_many(QUERIES, 2)
    retriever.search_many(QUERIES, 2)
    assert retriever.query_batches == [2, 2]


def test_single_query_search_always_embeds(folder: Path) -> None:
    """`search` is the latency path: it never reads query vectors from the cache."""
    retriever = QueryCountingRetriever()
    retriever.build_index(Corpus(MEMORIES))
    retriever.search_many(QUERIES[:1], 2)
    assert retriever.search(QUERIES[0], 2) == retriever.search_many(QUERIES[:1], 2)[0]
    retriever.search(QUERIES[0], 2)
    assert retriever.query_batches == [1, 1, 1]


@pytest.mark.parametrize("damage", ["zeros", "truncated", "garbage sidecar"])
def test_a_damaged_cache_is_rebuilt_with_a_warning(folder: Path, capsys: pytest.CaptureFixture[str],
                                                   damage: str) -> None:
    # Issue 32: all-zero vectors (checksum recomputed) were reused, and no damage was ever said.
    from recall_kit_dense.cache import array_checksum

    corpus = Corpus(MEMORIES)
    reference = build(corpus)
    array_path, sidecar_path = files(folder)
    if damage == "zeros":
        np.save(array_path, np.zeros_like(np.load(array_path)))
        sidecar = json.loads(sidecar_path.read_text())
        sidecar["sha256"] = array_checksum(np.load(array_path))
        sidecar_path.write_text(json.dumps(sidecar))
    elif damage == "truncated":
        array_path.write_bytes(array_path.read_bytes()[:200])
    else:
        sidecar_path.write_bytes(b"\x00\xff garbage")
    capsys.readouterr()
    again = build(corpus)
    assert again.embedded == [3] and again.index_stats()["cache"] == "corrupt"
    assert "failed its check" in capsys.readouterr().err
    assert [h.id for h in again.search("oat milk", 3)] == [h.id for h in reference.search("oat milk", 3)]


def test_a_full_disk_leaves_no_partial_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 32: the array was moved into place before the sidecar failed, leaving half a cache entry.
    import errno
    import os

    from recall_kit import RecallKitError

    real_fsync, calls = os.fsync, []

    def fsync_then_full(descriptor: int) -> None:
        calls.append(descriptor)
        if len(calls) == 2:  # the sidecar
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync_then_full)
    folder = tmp_path / "cache" / "dense"
    with pytest.raises((OSError, RecallKitError), match="No space left"):
        EmbeddingCache(folder).store({"k": 1}, np.eye(3, dtype=np.float32), {})
    assert list(tmp_path.iterdir()) == []


def test_batches_embedded_apart_and_stored_equal_a_build_bit_for_bit(folder: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The EmbedsInBatches capability (a distributed run's path): the batches are build_index's
    chunks, and the matrix stored from them is the one a build embeds, so a build then hits."""
    corpus = Corpus(MEMORIES + [Memory(str(20 + i), f"Note {i}: the plant on shelf {i} needs water.")
                                for i in range(6)])
    planner = CountingRetriever(DenseRetriever.Options(batch_size=1))  # 4 texts an encode call
    work = planner.embedding_work(corpus)
    assert [len(texts) for _, texts in work] == [4, 4, 1]
    planner.store_embeddings(corpus, [CountingRetriever(planner.options).embed_batch(batch) for batch in work])
    assert planner.embedding_work(corpus) == []  # stored: nothing missing
    assert build(corpus, batch_size=1).embedded == []  # a cache hit
    stored = EmbeddingCache().load(planner.cache_key(corpus))
    monkeypatch.setenv("RECALL_KIT_CACHE", str(tmp_path / "elsewhere"))
    built = build(corpus, batch_size=1)
    assert built.embedded == [9]
    assert stored.array is not None and built.embeddings is not None
    # Equal within a few ulps, not promised bit for bit (docs/scale.md, "What identical means"):
    # the same encode calls on the same threads, but a BLAS library may pick its kernel by
    # memory alignment as well as by shape. The rankings they give are the same.
    np.testing.assert_allclose(stored.array, built.embeddings, rtol=0, atol=1e-6)
    monkeypatch.setenv("RECALL_KIT_CACHE", str(tmp_path / "cache"))
    planned = CountingRetriever(DenseRetriever.Options(batch_size=1))
    planned.build_index(corpus)  # a hit on the entry the batches stored
    assert planned.embedded == []
    for query in ("oat milk", "garage door", "water the plant on shelf 3"):
        assert [hit.id for hit in planned.search(query, 9)] == [hit.id for hit in built.search(query, 9)]
    assert stored.extra == EmbeddingCache().load(planner.cache_key(corpus)).extra
    assert CountingRetriever(DenseRetriever.Options(cache=False)).embedding_work(corpus) == []


def test_a_query_cache_that_cannot_be_written_warns_once_and_the_search_goes_on(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The corpus cache reads fine but the queries' write fails (an OutputError, as a read-only or
    # full cache gives): it once stopped the search, since only OSError was caught there.
    retriever = build(Corpus(MEMORIES))
    capsys.readouterr()
    texts = ["dentist appointment", "oat milk coffee"]
    array_path, _ = EmbeddingCache().paths(retriever.query_cache_key(texts))
    array_path.mkdir(parents=True)  # a folder where the queries' array goes: atomic_open refuses it
    assert [hits[0].id for hits in retriever.search_many(texts, 1)] == ["10", "12"]
    again = build(Corpus(MEMORIES))
    array_path2, _ = EmbeddingCache().paths(again.query_cache_key(["garage door"]))
    array_path2.mkdir(parents=True)
    assert again.search_many(["garage door"], 1)[0][0].id == "11"
    assert capsys.readouterr().err.count("could not write the embedding cache") == 1
