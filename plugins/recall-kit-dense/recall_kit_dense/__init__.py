"""recall-kit-dense: the `dense` retriever (sentence-transformers), offline by default, and the
`embedding` and `combined` relevance judges, which use its model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_dense.retriever import DenseRetriever

__all__ = ["DenseRetriever"]


# Imported on first use: the host imports this module for every command, `--help` included.
__getattr__ = lazy_attributes(__name__, {"DenseRetriever": "recall_kit_dense.retriever"})


@hookimpl
def register_retrievers(register: Register) -> None:
    """Register `dense`."""
    from recall_kit_dense.retriever import DenseRetriever

    register("dense", DenseRetriever)


@hookimpl
def register_judges(register: Register) -> None:
    """Register `embedding` and `combined`."""
    from recall_kit_dense.judges import CombinedJudge, EmbeddingJudge

    register("embedding", EmbeddingJudge)
    register("combined", CombinedJudge)
