"""recall-kit-dense: the `dense` retriever (sentence-transformers), offline by default."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import recall_kit
from recall_kit.hookspecs import Register

if TYPE_CHECKING:
    from recall_kit_dense.retriever import DenseRetriever

__all__ = ["DenseRetriever"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the host imports this module for every command, `--help` included.
    if name == "DenseRetriever":
        from recall_kit_dense.retriever import DenseRetriever

        return DenseRetriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@recall_kit.hookimpl
def register_retrievers(register: Register) -> None:
    """Register `dense`."""
    from recall_kit_dense.retriever import DenseRetriever

    register("dense", DenseRetriever)
