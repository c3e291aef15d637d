"""recall-kit-postgres: evaluate PostgreSQL full-text search where it runs in production."""

from __future__ import annotations

from recall_kit import hookimpl
from recall_kit_postgres.retriever import PostgresFTS

__all__ = ["PostgresFTS"]


@hookimpl
def register_retrievers(register) -> None:  # type: ignore[no-untyped-def]
    register("pg-fts", PostgresFTS)
