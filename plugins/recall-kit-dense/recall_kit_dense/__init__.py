"""recall-kit-dense: the `dense` retriever (sentence-transformers), offline by default."""

from __future__ import annotations

import recall_kit
from recall_kit.hookspecs import Register
from recall_kit_dense.retriever import DenseRetriever

__all__ = ["DenseRetriever"]


@recall_kit.hookimpl
def register_retrievers(register: Register) -> None:
    """Register `dense`."""
    register("dense", DenseRetriever)
