"""The ONNX Runtime query path: exported from the bundled model's weights, cached, same rankings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from recall_kit_dense.retriever import DenseRetriever

from recall_kit.plugin import Corpus, Memory

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

Options = DenseRetriever.Options

MEMORIES = [
    Memory("1", "The cat sleeps on the warm windowsill every afternoon."),
    Memory("2", "Quarterly revenue grew eight percent, driven by subscription sales."),
    Memory("3", "My sister's wedding is in Lisbon next June."),
    Memory("4", "Bake the sourdough at 230 degrees for forty minutes."),
    Memory("5", "The flight to Tokyo leaves from gate 42 at 7am."),
]
QUERIES = ["when is my sister getting married", "bread recipe oven temperature", "pet naps", "company earnings"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def built(cache: Path, monkeypatch: pytest.MonkeyPatch, **options: object) -> DenseRetriever:
    monkeypatch.setenv("RECALL_KIT_CACHE", str(cache))
    retriever = DenseRetriever(Options(**options))  # type: ignore[arg-type]
    retriever.build_index(Corpus(MEMORIES))
    return retriever


@pytest.mark.slow
def test_onnx_query_embeddings_equal_torch(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch_side = built(cache, monkeypatch)
    onnx_side = built(cache, monkeypatch, backend="onnx")
    want = torch_side._embed_queries(QUERIES)
    got = onnx_side._embed_queries(QUERIES)
    assert got.shape == want.shape == (4, 384) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-5)
    for query in QUERIES:
        assert [h.id for h in onnx_side.search(query, 3)] == [h.id for h in torch_side.search(query, 3)]
    assert onnx_side.search("   ", 3) == []
    exported = list((cache / "dense" / "onnx").glob("*.onnx"))
    assert len(exported) == 1  # exported once, into the cache folder, and reused


@pytest.mark.slow
def test_int8_quantised_model_is_a_second_file_and_close(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch_side = built(cache, monkeypatch)
    quantised = built(cache, monkeypatch, backend="onnx", quantize=True, threads=2)
    cosines = (quantised._embed_queries(QUERIES) * torch_side._embed_queries(QUERIES)).sum(axis=1)
    assert (cosines > 0.9).all() and (cosines < 1 - 1e-6).any()  # close, and really quantised
    assert quantised.search(QUERIES[0], 1)[0].id == "3"
    assert len(list((cache / "dense" / "onnx").glob("*-int8.onnx"))) == 1


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="threads"):
        Options(threads=0)
    with pytest.raises(ValueError, match="quantize needs backend=onnx"):
        Options(quantize=True)
