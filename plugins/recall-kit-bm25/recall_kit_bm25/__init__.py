"""recall-kit-bm25: a BM25 retriever whose scores are exactly rank-bm25's, computed fast."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_bm25.retriever import BM25Retriever
    from recall_kit_bm25.tokenize import tokenize

__all__ = ["BM25Retriever", "register_retrievers", "tokenize"]

# The public names, imported on first use: the host imports this module for every command,
# `recall-kit --help` included, and calls the hook only when it needs the retrievers.
_LAZY = {"BM25Retriever": "recall_kit_bm25.retriever", "tokenize": "recall_kit_bm25.tokenize"}


__getattr__ = lazy_attributes(__name__, _LAZY)


@hookimpl
def register_retrievers(register: Register) -> None:
    """Register the `bm25` retriever."""
    from recall_kit_bm25.retriever import BM25Retriever

    register("bm25", BM25Retriever)
