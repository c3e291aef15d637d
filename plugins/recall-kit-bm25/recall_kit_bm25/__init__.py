"""recall-kit-bm25: a BM25 retriever whose scores are exactly rank-bm25's, computed fast."""

from __future__ import annotations

from typing import Any

import recall_kit
from recall_kit_bm25.retriever import BM25Retriever
from recall_kit_bm25.tokenize import tokenize

__all__ = ["BM25Retriever", "register_retrievers", "tokenize"]


@recall_kit.hookimpl
def register_retrievers(register: Any) -> None:
    """Register the `bm25` retriever."""
    register("bm25", BM25Retriever)
