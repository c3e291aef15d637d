"""What the study tests share: the plugins they run with, in this process and in a subprocess."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from recall_kit.testing import registered_plugin

MODULES = {"recall-kit-fts5": "recall_kit_fts5", "recall-kit-bm25": "recall_kit_bm25",
           "recall-kit-fusion": "recall_kit_fusion", "recall-kit-dense": "recall_kit_dense",
           "recall-kit-graph": "recall_kit_graph"}


@contextmanager
def plugins(*distributions: str) -> Iterator[None]:
    """The named plugins registered for the block (skips the test when one is not installed)."""
    modules = []
    for name in distributions:
        try:
            modules.append(importlib.import_module(MODULES[name]))
        except ImportError:
            pytest.skip(f"needs {name}")
    with ExitStack() as stack:
        for module in modules:
            stack.enter_context(registered_plugin(module, name=f"{module.__name__}-for-study-test"))
        yield


def subprocess_env(*distributions: str) -> dict[str, str]:
    """The environment of a `recall-kit` subprocess that loads exactly these plugins."""
    return {**os.environ, "RECALL_KIT_LOAD_PLUGINS": ",".join(distributions), "PYTHONUNBUFFERED": "1"}


#: The end of a small study file: the two lexical systems, three queries timed each.
LEXICAL_PAIR = """
[[systems]]
name = "fts5"
retriever = "fts5"

[[systems]]
name = "bm25"
retriever = "bm25"

[cost]
latency_sample = 3
"""
