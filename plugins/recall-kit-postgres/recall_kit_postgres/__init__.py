"""recall-kit-postgres: evaluate PostgreSQL full-text search and pgvector where they run in
production, on an external server or an embedded one started for the run."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_postgres.retriever import PostgresFTS

__all__ = ["PostgresFTS"]


# Imported on first use: the host imports this module for every command, `--help` included.
__getattr__ = lazy_attributes(__name__, {"PostgresFTS": "recall_kit_postgres.retriever"})


@hookimpl
def register_retrievers(register: Register) -> None:
    from recall_kit_postgres.retriever import PostgresFTS

    register("pg-fts", PostgresFTS)
    # pgvector and pg-hybrid embed with recall-kit-dense's model and cache (the same vectors as
    # `dense`): registered when it is installed (pip install "recall-kit-postgres[vector]").
    if importlib.util.find_spec("recall_kit_dense") is not None:
        from recall_kit_postgres.hybrid import PgHybrid
        from recall_kit_postgres.vector import PgVector

        register("pgvector", PgVector)
        register("pg-hybrid", PgHybrid)
