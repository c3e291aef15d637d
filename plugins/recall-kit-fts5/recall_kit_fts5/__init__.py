"""recall-kit-fts5: a SQLite FTS5 retriever (stdlib sqlite3), in bm25 or production mode."""

from __future__ import annotations

from typing import Any

import recall_kit
from recall_kit_fts5.query import query_words, quote_phrase
from recall_kit_fts5.retriever import FTS5Retriever

__all__ = ["FTS5Retriever", "query_words", "quote_phrase", "register_retrievers"]


@recall_kit.hookimpl
def register_retrievers(register: Any) -> None:
    """Register the `fts5` retriever."""
    register("fts5", FTS5Retriever)
