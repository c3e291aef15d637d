"""Approximate search (faiss, hnswlib): same answers as exact on small corpora, measured recall."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from recall_kit_dense.ann import MissingExtraError
from recall_kit_dense.retriever import DenseRetriever

from recall_kit.plugin import Corpus, Memory

TOPICS = ["garden", "taxes", "guitar", "marathon", "kitchen", "passport", "printer", "birthday"]
MEMORIES = [
    Memory(str(100 + i), f"Note {i} about the {topic}: item {i % 5} needs attention soon.")
    for i, topic in enumerate(TOPICS * 5)
]
QUERIES = ["tomatoes in the vegetable bed", "filing the tax return", "running a long race", ""]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_exports: Callable[[Path], Path]) -> None:
    monkeypatch.setenv("RECALL_KIT_CACHE", str(with_exports(tmp_path / "cache")))


def build(**options: object) -> DenseRetriever:
    retriever = DenseRetriever(DenseRetriever.Options(**options))  # type: ignore[arg-type]
    retriever.build_index(Corpus(MEMORIES))
    return retriever


def check_against_exact(kind: str) -> None:
    exact = build()
    approximate = build(index=kind, ann_recall_check=True, ann_ef_search=200)
    expected = exact.search_many(QUERIES, 5)
    found = approximate.search_many(QUERIES, 5)
    for want, got in zip(expected, found, strict=True):
        # 40 points and ef=200: the graph search visits everything, so the answer is exact.
        assert [h.id for h in got] == [h.id for h in want]
        np.testing.assert_allclose([h.score for h in got], [h.score for h in want], atol=1e-5)
    assert approximate.search("filing the tax return", 100)[0].id == want_top(exact)
    stats = approximate.index_stats()
    assert stats["index"] == kind
    assert stats["ann_recall_at_k"] == 1.0
    assert stats["ann_recall_queries"] == 4  # three batch queries and one k=100 query; "" has none
    assert stats["ann_recall_expected"] == 3 * 5 + 40
    matrix_bytes = 40 * 384 * 4
    assert stats["ann_bytes"] > 0
    assert approximate.index_size_bytes() == matrix_bytes + stats["ann_bytes"]
    assert exact.index_size_bytes() == matrix_bytes


def want_top(exact: DenseRetriever) -> str:
    return exact.search("filing the tax return", 1)[0].id


@pytest.mark.skipif(importlib.util.find_spec("faiss") is None, reason="faiss-cpu is not installed")
def test_faiss_matches_exact_and_reports_recall() -> None:
    check_against_exact("faiss")


@pytest.mark.skipif(importlib.util.find_spec("hnswlib") is None,
                    reason="hnswlib is not installed (no wheel for this platform; extra 'hnsw')")
def test_hnswlib_matches_exact_and_reports_recall() -> None:
    check_against_exact("hnsw")


@pytest.mark.parametrize(("kind", "module", "extra"), [("hnsw", "hnswlib", "hnsw"), ("faiss", "faiss", "faiss")])
def test_a_missing_library_is_one_line_naming_the_extra(
    kind: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules makes `import module` raise ImportError, as when it is not installed.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingExtraError) as caught:
        build(index=kind)
    assert str(caught.value) == (
        f"dense.index={kind} needs {module}: pip install 'recall-kit-dense[{extra}]'."
    )


def test_exact_search_reports_no_ann_numbers() -> None:
    stats = build(ann_recall_check=True).index_stats()
    assert "ann_recall_at_k" not in stats and "ann_bytes" not in stats
