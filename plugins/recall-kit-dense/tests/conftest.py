"""The bundled model's ONNX export, made once for the test run (a real export, through
sentence-transformers and torch, into the run's cache folder), and linked into the cache folders
the tests make: a test with a cache folder of its own starts from the export a user has after the
first run, not from nothing (test_dense_onnx.py exports afresh where the export itself is tested)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

#: The run's cache folder (the root conftest's, shared by the xdist workers), read at import,
#: before any test points RECALL_KIT_CACHE elsewhere: the export is made there once for the run.
RUN_CACHE = os.environ.get("RECALL_KIT_CACHE")


@pytest.fixture(scope="session")
def onnx_exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the bundled MiniLM's export (`<cache>/dense/onnx`)."""
    from recall_kit_dense.onnx_backend import load_onnx_model
    from recall_kit_dense.retriever import DenseRetriever, resolve_model

    cache = Path(RUN_CACHE) if RUN_CACHE else tmp_path_factory.mktemp("onnx-exports")
    saved = os.environ.get("RECALL_KIT_CACHE")
    os.environ["RECALL_KIT_CACHE"] = str(cache)
    try:
        loaded = load_onnx_model(resolve_model(DenseRetriever.Options().model), None, 1)
        assert loaded is not None and loaded.backend == "onnx"
    finally:
        if saved is None:
            os.environ.pop("RECALL_KIT_CACHE", None)
        else:
            os.environ["RECALL_KIT_CACHE"] = saved
    return cache / "dense" / "onnx"


@pytest.fixture(scope="session")
def with_exports(onnx_exports: Path) -> Callable[[Path], Path]:
    """A function that gives a RECALL_KIT_CACHE folder hard links to the session's exports."""

    def seed(cache: Path) -> Path:
        target = cache / "dense" / "onnx"
        target.mkdir(parents=True, exist_ok=True)
        for folder in onnx_exports.iterdir():  # complete exports only: a `.partial` one is being written
            if not folder.name.startswith(".") and not (target / folder.name).exists():
                # A file being written (`.NAME.partial`: ONNX Runtime's rewrite of the graph) is left out.
                shutil.copytree(folder, target / folder.name, copy_function=os.link,
                                ignore=shutil.ignore_patterns(".*"))
        return cache

    return seed
