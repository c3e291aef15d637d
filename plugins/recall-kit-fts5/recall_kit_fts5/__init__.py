"""recall-kit-fts5: a SQLite FTS5 retriever (stdlib sqlite3), in bm25 or production mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_fts5.query import query_words, quote_phrase
    from recall_kit_fts5.retriever import FTS5Retriever

__all__ = ["FTS5Retriever", "query_words", "quote_phrase", "register_retrievers"]

# The public names, imported on first use: the host imports this module for every command,
# `recall-kit --help` included, and calls the hook only when it needs the retrievers.
_LAZY = {
    "FTS5Retriever": "recall_kit_fts5.retriever",
    "query_words": "recall_kit_fts5.query",
    "quote_phrase": "recall_kit_fts5.query",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


@hookimpl
def register_retrievers(register: Register) -> None:
    """Register the `fts5` retriever."""
    from recall_kit_fts5.retriever import FTS5Retriever

    register("fts5", FTS5Retriever)
