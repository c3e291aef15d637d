"""A leg's `index_stats()` over its scopes (one index per scope) merged into the result's one entry."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any


def merge_index_stats(stats_by_scope: Sequence[Mapping[str, Any]], queries_by_scope: Sequence[int],
                      settings: Collection[str] = ()) -> dict[str, Any]:
    """Merge the stats of a leg's indexes, one per scope, by what each value is:

    - a key in `settings` (the retriever's `index_settings`: a dimension, an HNSW `m`) is kept
      when every scope agrees and listed when they differ, as names are, at any depth;
    - an integer is a count (rows, edges, matched ids): summed over the scopes;
    - a float is a ratio or a measurement (``ann_recall_at_k``, a latency percentile): never
      summed, but averaged over the scopes that report it, weighted by a count: the ratio's own
      denominator where the stats give it as ``<stem>_expected`` (``ann_recall_at_k`` by
      ``ann_recall_expected``, which makes it the recall over every index), else the number of
      queries each scope searched (`queries_by_scope`, in the order of `stats_by_scope`);
    - a mapping is merged by the same rules;
    - anything else (a name, a flag) is kept when every scope reporting it agrees, and is the list
      of its distinct values, in scope order, when they differ.

    A single scope's stats are returned as they are.
    """
    if len(stats_by_scope) != len(queries_by_scope):
        raise ValueError("one query count per scope is needed")
    if len(stats_by_scope) == 1:
        return dict(stats_by_scope[0])
    merged: dict[str, Any] = {}
    keys = list(dict.fromkeys(key for stats in stats_by_scope for key in stats))
    for key in keys:
        present = [(stats, queries) for stats, queries in zip(stats_by_scope, queries_by_scope, strict=True)
                   if key in stats]
        values = [stats[key] for stats, _ in present]
        if key not in settings and all(_is_count(value) for value in values):
            merged[key] = sum(values)
        elif key not in settings and all(_is_number(value) for value in values):
            weights = [_weight(key, stats, queries) for stats, queries in present]
            merged[key] = _weighted_mean(values, weights)
        elif all(isinstance(value, Mapping) for value in values):
            merged[key] = merge_index_stats(values, [queries for _, queries in present], settings)
        else:
            distinct: list[Any] = []
            for value in values:
                if value not in distinct:
                    distinct.append(value)
            merged[key] = distinct[0] if len(distinct) == 1 else distinct
    return merged


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _weight(key: str, stats: Mapping[str, Any], queries: int) -> float:
    """The count a ratio `key` is averaged by: its `<stem>_expected` denominator, else `queries`."""
    stems = [key[:end] for end in range(len(key)) if key[end] == "_"]
    for stem in reversed(stems):  # the longest stem first
        denominator = stats.get(f"{stem}_expected")
        if isinstance(denominator, int) and not isinstance(denominator, bool):
            return float(denominator)
    return float(queries)


def _weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    total = sum(weights)
    if total <= 0:  # no scope searched anything: every scope counts alike
        return round(sum(values) / len(values), 6)
    return round(sum(value * weight for value, weight in zip(values, weights, strict=True)) / total, 6)
