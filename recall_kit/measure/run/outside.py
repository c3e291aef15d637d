"""Hits a live system returns outside the evaluated corpus: counted per leg and query, the sensitive
ones among them named by id as a privacy finding (never by text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recall_kit.measure.result_sections import PRIVACY_PREFIX, LegOutsideCorpus
from recall_kit.types import Query

#: How many query ids a warning names before it gives a count.
NAMED_QUERIES = 10


def count_outside(runs: Mapping[str, Any], queries: Sequence[Query],
                  sensitive_ids: frozenset[str]) -> dict[str, LegOutsideCorpus]:
    """Per live leg (a `LegRun` with `own_store`): its hits outside the corpus per query, and the
    sensitive ids among them (the dataset's `sensitive_ids` and the leg's own, `LegRun.sensitive`).
    In-process legs are left out (they cannot return such an id)."""
    found: dict[str, LegOutsideCorpus] = {}
    for name, run in runs.items():
        if not run.own_store:
            continue
        # The dataset's sensitive ids and the system's own (`Retriever.sensitive_ids`): a memory the
        # server holds under an id of its own is counted whatever the id scheme.
        flagged = sensitive_ids | frozenset(getattr(run, "sensitive", ()))
        per_query = {queries[index].query_id: len(ids) for index, ids in sorted(run.outside.items())}
        sensitive = {queries[index].query_id: [doc for doc in ids if doc in flagged]
                     for index, ids in sorted(run.outside.items())}
        found[name] = LegOutsideCorpus(hits=sum(per_query.values()), queries=per_query,
                                       sensitive={query: ids for query, ids in sensitive.items() if ids})
    return found


def _named(query_ids: Sequence[str]) -> str:
    shown = ", ".join(query_ids[:NAMED_QUERIES])
    return shown + (f" and {len(query_ids) - NAMED_QUERIES} more" if len(query_ids) > NAMED_QUERIES else "")


def outside_warnings(found: Mapping[str, LegOutsideCorpus], query_count: int) -> list[str]:
    """The result's sentences: each privacy finding first, then each leg's hits outside the corpus."""
    privacy, outside = [], []
    for leg, counts in found.items():
        if counts.sensitive:
            queries = list(counts.sensitive)
            privacy.append(
                f"{PRIVACY_PREFIX} leg {leg!r} returned {counts.sensitive_hits} sensitive "
                f"{'memory' if counts.sensitive_hits == 1 else 'memories'} (ids the dataset or the system marks sensitive) "
                f"on {len(queries)} of {query_count} queries: {_named(queries)}."
            )
        if counts.hits:
            outside.append(
                f"Leg {leg!r} returned {counts.hits} {'id' if counts.hits == 1 else 'ids'} outside the evaluated "
                f"corpus on {len(counts.queries)} of {query_count} queries (its store holds memories the "
                "dataset does not): scored as unjudged, non-relevant hits; 'recall-kit pool' offers them for judging."
            )
    return privacy + outside
