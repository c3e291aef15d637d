"""`recall-kit dataset stats`: aggregate numbers about a dataset (counts, strata, length
distributions), never any memory or query text."""

from __future__ import annotations

from collections import Counter
from typing import Any

from recall_kit.dataset import Dataset, summarise
from recall_kit.measure.result_sections import DatasetInfo


def dataset_stats(dataset: Dataset) -> dict[str, Any]:
    """Aggregate numbers only: counts, per-stratum sizes, length distributions. Never any text."""
    relevant_per_query = [sum(1 for g in dataset.qrels[q.query_id].values() if g >= 1) for q in dataset.queries]
    graded = any(any(g > 1 for g in judgments.values()) for judgments in dataset.qrels.values())
    strata: dict[str, Any] = {}
    for stratum in dataset.strata:
        members = [q for q in dataset.queries if q.stratum == stratum]
        strata[stratum] = {
            "queries": len(members),
            "relevant_per_query": summarise(
                [sum(1 for g in dataset.qrels[q.query_id].values() if g >= 1) for q in members]
            ),
        }
    return {
        **DatasetInfo.of(dataset).to_dict(),
        "scopes": len({m.scope for m in dataset.corpus if m.scope is not None}),
        "parents": len({m.parent_id for m in dataset.corpus if m.parent_id is not None}),
        "categories": dict(sorted(Counter(m.category or "(none)" for m in dataset.corpus).items())),
        "graded_qrels": graded,
        "judgments": sum(len(j) for j in dataset.qrels.values()),
        "relevant_per_query": summarise(relevant_per_query),
        "memory_words": summarise([len(m.content.split()) for m in dataset.corpus]),
        "memory_chars": summarise([len(m.content) for m in dataset.corpus]),
        "query_words": summarise([len(q.text.split()) for q in dataset.queries]),
        "strata_detail": strata,
        "empty_memories": sum(1 for m in dataset.corpus if not m.content.strip()),
    }


__all__ = ["dataset_stats"]
