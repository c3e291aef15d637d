"""Scoring: metric names to metrics, rankings joined with qrels, per-query values, their means."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.errors import DuplicateNameError, OptionError, UnknownMetricError
from recall_kit.types import JudgedRankings, Metric, Qrels

# The order the default metric set is shown in; families not listed follow by name. Only an
# order: which families exist, and which are defaults, comes from the registry.
_DEFAULT_DISPLAY_ORDER = ("recall", "ndcg", "mrr", "map", "judged")

_NAME = re.compile(r"^(?P<family>[^@\s]+)(?:@(?P<cutoff>.*))?$")
_ALIAS_CUTOFF = "{k}"
_TRAILING_NUMBER = re.compile(r"^(?P<stem>.*?)(?P<number>[0-9]+)$")
# trec_eval's -m syntax, "P.10" for the measure it prints as "P_10".
_TREC_DOT = re.compile(r"^(?P<stem>[A-Za-z_]+)\.(?P<number>[0-9]+)$")

# The alias table of the last registry state seen: (entries dict, {lowercase alias: family}).
_alias_cache: tuple[Any, dict[str, str]] | None = None


@dataclass(frozen=True)
class MetricSpec:
    """One metric to compute: its display name (``recall@10``), family and cutoff."""

    name: str
    metric: Metric
    cutoff: int | None

    def compute(self, data: JudgedRankings) -> np.ndarray:
        """One float64 per query of `data`."""
        values = np.asarray(self.metric.compute(data, self.cutoff), dtype=np.float64)
        if values.shape != (len(data.query_ids),):
            raise ValueError(
                f"metric {self.name!r} returned shape {values.shape}, "
                f"expected ({len(data.query_ids)},)"
            )
        return values


def _spec_name(family: str, cutoff: int | None) -> str:
    return family if cutoff is None else f"{family}@{cutoff}"


def _parse(name: str) -> tuple[str, int | None]:
    text = name.strip() if isinstance(name, str) else ""
    match = _NAME.match(text)
    if not match:
        raise OptionError(
            f"Bad metric name {name!r}: write a family with an optional cutoff, e.g. 'recall@10'."
        )
    raw = match.group("cutoff")
    if raw is None:
        return match.group("family"), None
    if not re.fullmatch(r"[0-9]+", raw.strip()) or int(raw) < 1:
        raise OptionError(
            f"Bad cutoff in metric {name!r}: the cutoff after '@' is a whole number >= 1, "
            "e.g. 'recall@10'."
        )
    return match.group("family"), int(raw)


def resolve_metrics(names: Sequence[str] | None) -> list[MetricSpec]:
    """Turn metric names (``recall@10``, ``mrr``, ``map@100``) into specs, in order, no repeats.

    A name may also be one users of trec_eval or ir_measures write (``ndcg_cut_10``, ``P_10``,
    ``recip_rank``, ``nDCG@10``, ``RR``, ...): each metric's `aliases`, matched without regard to
    case, and trec_eval's ``-m`` syntax (``P.5``, ``ndcg_cut.5,10`` split into ``["ndcg_cut.5",
    "10"]``). The spec keeps recall-kit's canonical name (``ndcg@10``), so ``ndcg_cut_10`` and
    ``ndcg@10`` asked together give one column.

    `None` or an empty sequence gives the defaults: every registered family's `default_cutoffs`.
    An unknown family raises `UnknownMetricError` (listing what is registered); a cutoff on a
    family that takes none, a missing required cutoff, or a malformed cutoff raises `OptionError`.
    """
    from recall_kit import registry

    if not names:
        return _default_specs(registry.metrics.all())
    specs: list[MetricSpec] = []
    seen: set[str] = set()
    dotted_stem: str | None = None
    for raw in names:
        # trec_eval's "-m P.5,10" arrives split at the comma: a bare number after a dotted
        # trec_eval name is one more cutoff of that measure.
        if dotted_stem is not None and isinstance(raw, str) and raw.strip().isdigit():
            raw = f"{dotted_stem}.{raw.strip()}"
        dotted = _TREC_DOT.match(raw.strip()) if isinstance(raw, str) else None
        dotted_stem = dotted.group("stem") if dotted else None
        family, cutoff = _parse(raw)
        entries = registry.metrics.all()
        if family not in entries:
            family, cutoff = _resolve_alias(raw, family, cutoff, entries)
        metric = entries[family].obj
        if cutoff is not None and metric.cutoff == "none":
            raise OptionError(
                f"Metric {family!r} takes no cutoff: write {family!r}, not {raw.strip()!r}."
            )
        if cutoff is None and metric.cutoff == "required":
            raise OptionError(f"Metric {family!r} needs a cutoff: write e.g. '{family}@10'.")
        name = _spec_name(family, cutoff)
        if name not in seen:
            seen.add(name)
            specs.append(MetricSpec(name=name, metric=metric, cutoff=cutoff))
    return specs


def canonical_metric_name(name: str) -> str:
    """recall-kit's name for a metric name as a user wrote it (``ndcg_cut_10`` -> ``ndcg@10``).

    For commands that read names back from result files (compare, gate): a name no registered
    metric answers to (a plugin's, not installed here) is returned as written, stripped.
    """
    try:
        return resolve_metrics([name])[0].name
    except UnknownMetricError:
        return name.strip()


def metric_aliases(entries: dict[str, Any] | None = None) -> dict[str, str]:
    """Every alias of the registered metrics, lowercased, to the family it names.

    Each family's own name is an alias of itself (``NDCG@10`` finds ``ndcg``). An alias that two
    families claim raises `DuplicateNameError` naming both plugins.
    """
    global _alias_cache
    from recall_kit import registry

    if entries is None:
        entries = registry.metrics.all()
    if _alias_cache is not None and _alias_cache[0] is entries:
        return _alias_cache[1]
    table: dict[str, str] = {}
    owners: dict[str, str] = {}
    for family, registration in entries.items():
        metric: Metric = registration.obj
        implicit = {
            "required": [f"{family}@{_ALIAS_CUTOFF}"],
            "optional": [family, f"{family}@{_ALIAS_CUTOFF}"],
            "none": [family],
        }[metric.cutoff]
        for alias in (*implicit, *metric.aliases):
            key = alias.lower()
            if key in table and table[key] != family:
                raise DuplicateNameError(
                    f"Metric alias {alias!r} is claimed by both {table[key]!r} "
                    f"({owners[key]!r}) and {family!r} ({registration.plugin!r})."
                )
            table[key] = family
            owners[key] = registration.plugin
    _alias_cache = (entries, table)
    return table


def _resolve_alias(
    raw: str, family: str, cutoff: int | None, entries: dict[str, Any]
) -> tuple[str, int | None]:
    """(family, cutoff) for a name whose family (as `_parse` read it) is not registered."""
    table = metric_aliases(entries)
    text = raw.strip().lower()
    candidates = [text]
    dotted = _TREC_DOT.match(text)
    if dotted:
        candidates.append(f"{dotted.group('stem')}_{dotted.group('number')}")
    for candidate in candidates:
        if candidate in table:
            return table[candidate], None
        match = _TRAILING_NUMBER.match(candidate)
        if match:
            key = match.group("stem") + _ALIAS_CUTOFF
            if key in table:
                number = int(match.group("number"))
                if number < 1:
                    raise OptionError(
                        f"Bad cutoff in metric {raw!r}: the cutoff is a whole number >= 1."
                    )
                return table[key], number
    # An alias written with a cutoff it does not take (Rprec@5), or without one it needs (ERR):
    # let the caller say so.
    for key in (family.lower(), family.lower() + "@" + _ALIAS_CUTOFF):
        if key in table:
            return table[key], cutoff
    raise UnknownMetricError(family, list(entries), _closest_name(raw.strip(), entries, table))


def _closest_name(text: str, entries: dict[str, Any], table: dict[str, str]) -> str | None:
    """The registered name or alias closest to a misspelt one, written with its cutoff."""
    number = _TRAILING_NUMBER.match(text)
    cutoff = number.group("number") if number else "10"
    spelled = {}  # lowercased -> as registered (P_{k}, not p_{k}); canonical names last, to win
    for family, registration in entries.items():
        for alias in (*registration.obj.aliases, f"{family}@{_ALIAS_CUTOFF}", family):
            if alias.lower() in table:
                spelled[alias.replace(_ALIAS_CUTOFF, cutoff).lower()] = alias.replace(_ALIAS_CUTOFF, cutoff)
    close = difflib.get_close_matches(text.lower(), list(spelled), n=1, cutoff=0.75)
    return spelled[close[0]] if close else None


def _default_specs(registered: dict[str, Any]) -> list[MetricSpec]:
    def order(family: str) -> tuple[int, str]:
        if family in _DEFAULT_DISPLAY_ORDER:
            return _DEFAULT_DISPLAY_ORDER.index(family), family
        return len(_DEFAULT_DISPLAY_ORDER), family

    specs: list[MetricSpec] = []
    for family in sorted(registered, key=order):
        metric: Metric = registered[family].obj
        for cutoff in metric.default_cutoffs:
            specs.append(MetricSpec(name=_spec_name(family, cutoff), metric=metric, cutoff=cutoff))
    return specs


def _first_repeat(ranking: Sequence[str]) -> str:
    seen: set[str] = set()
    for doc in ranking:
        if doc in seen:
            return doc
        seen.add(doc)
    raise ValueError("no repeated document")


def judge_rankings(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str]],
    qrels: Qrels,
    depth: int | None = None,
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> JudgedRankings:
    """Join rankings with relevance judgments into the dense arrays the metrics read.

    `rankings[i]` is query `query_ids[i]`'s ranking as document ids (strings), already in final
    rank order (trec_eval's order for a run: see `recall_kit.types.sort_hits`); it is cut at
    `depth` when one is given. A query missing from `qrels` has no judgments. A document id twice
    in one ranking raises `ValueError`, as trec_eval refuses duplicate documents.

    `relevance_level` (trec_eval ``-l``): grades >= it count as relevant for the binary measures
    (recall, precision, map, ...); graded measures (ndcg, err) use the grades themselves.
    `judged_only` (trec_eval ``-J``): documents without a judgment (absent from the qrels, or with
    a negative grade: pooled but not judged) are removed from each ranking, after the `depth` cut,
    before anything is scored.
    """
    if len(query_ids) != len(rankings):
        raise ValueError(f"{len(query_ids)} query ids but {len(rankings)} rankings")
    check_relevance_level(relevance_level, error=ValueError)
    if depth is not None:
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        rankings = [ranking[:depth] for ranking in rankings]
    num_queries = len(query_ids)
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=num_queries)
    total = int(lengths.sum())

    # One set per ranking, built in C: cheaper than it looks, and trec_eval refuses duplicates.
    distinct = np.fromiter(map(len, map(set, rankings)), dtype=np.int64, count=num_queries)
    if total and (distinct != lengths).any():
        row = int(np.flatnonzero(distinct != lengths)[0])
        repeated = _first_repeat(rankings[row])
        raise ValueError(f"ranking of query {query_ids[row]!r} holds document {repeated!r} twice")

    empty: dict[str, int] = {}
    judgments = [qrels.get(query_id, empty) for query_id in query_ids]

    # Every ranked cell's grade, NaN where not in the qrels: dict.get runs in C through map(), so
    # the only per-query Python work is building one iterator.
    nan = float("nan")
    cells = np.fromiter(
        chain.from_iterable(
            map(judged.get, ranking, repeat(nan)) for judged, ranking in zip(judgments, rankings)
        ),
        dtype=np.float64,
        count=total,
    )
    if judged_only:
        # trec_eval -J: drop every document without a judgment (NaN >= 0 is False), keep order.
        keep = cells >= 0
        if not keep.all():
            owner = np.repeat(np.arange(num_queries), lengths)
            cells = cells[keep]
            lengths = np.bincount(owner[keep], minlength=num_queries).astype(np.int64)
            total = int(lengths.sum())
    width = int(lengths.max()) if num_queries else 0
    pooled_cells = ~np.isnan(cells)
    judged_cells = cells >= 0
    grade_cells = np.where(judged_cells, cells, 0.0).astype(np.int32)
    grades = np.zeros((num_queries, width), dtype=np.int32)
    judged = np.zeros((num_queries, width), dtype=bool)
    pooled = np.zeros((num_queries, width), dtype=bool)
    if total == num_queries * width:
        grades[...] = grade_cells.reshape(num_queries, width)
        judged[...] = judged_cells.reshape(num_queries, width)
        pooled[...] = pooled_cells.reshape(num_queries, width)
    else:
        filled = np.arange(width) < lengths[:, None]
        grades[filled] = grade_cells
        judged[filled] = judged_cells
        pooled[filled] = pooled_cells

    # Per-query counts from the qrels, and the ideal ranking's gains: each query's positive
    # grades (whatever the relevance level, as trec_eval's ndcg), sorted descending.
    sizes = np.fromiter(map(len, judgments), dtype=np.int64, count=num_queries)
    all_grades = np.fromiter(
        chain.from_iterable(judged.values() for judged in judgments),
        dtype=np.int64,
        count=int(sizes.sum()),
    )
    owner = np.repeat(np.arange(num_queries), sizes)
    num_relevant = np.bincount(
        owner[all_grades >= relevance_level], minlength=num_queries
    ).astype(np.int64)
    nonrelevant = (all_grades >= 0) & (all_grades < relevance_level)
    num_judged_nonrelevant = np.bincount(owner[nonrelevant], minlength=num_queries).astype(np.int64)
    positive = all_grades >= 1
    pos_grades, pos_owner = all_grades[positive], owner[positive]
    num_positive = np.bincount(pos_owner, minlength=num_queries).astype(np.int64)
    order = np.lexsort((-pos_grades, pos_owner))
    pos_grades, pos_owner = pos_grades[order], pos_owner[order]
    starts = np.cumsum(num_positive) - num_positive
    ideal_grades = np.zeros((num_queries, int(num_positive.max()) if num_queries else 0), np.int32)
    ideal_grades[pos_owner, np.arange(len(pos_owner)) - starts[pos_owner]] = pos_grades

    return JudgedRankings(
        query_ids=list(query_ids),
        grades=grades,
        judged=judged,
        lengths=lengths,
        num_relevant=num_relevant,
        ideal_grades=ideal_grades,
        pooled=pooled,
        num_judged_nonrelevant=num_judged_nonrelevant,
        relevance_level=int(relevance_level),
    )


def check_relevance_level(level: int, error: type[Exception] = OptionError) -> int:
    """The relevance level (trec_eval ``-l``), checked: a whole number >= 1."""
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 1:
        raise error(f"relevance level must be a whole number >= 1 (trec_eval -l), got {level!r}")
    return int(level)


def evaluate(data: JudgedRankings, specs: Sequence[MetricSpec]) -> dict[str, np.ndarray]:
    """Per-query values (float64, one per query of `data`) by metric name, in `specs` order."""
    return {spec.name: spec.compute(data) for spec in specs}


def aggregate(
    values: dict[str, np.ndarray], strata: Sequence[str], totals: Collection[str] = ()
) -> dict[str, Any]:
    """Macro averages: over all queries, and per stratum (strata in order of first appearance).

    Returns ``{"overall": {name: mean, ..., "n": Q}, "strata": {stratum: {name: mean, ..., "n":
    count}}}`` with plain Python numbers. With no queries every mean is 0.0 and ``n`` is 0.
    Names in `totals` are summed instead (counts such as ``num_ret``, as trec_eval sums them:
    see `summed_names`).
    """
    num_queries = len(strata)
    for name, array in values.items():
        if len(array) != num_queries:
            raise ValueError(f"{name!r} has {len(array)} values for {num_queries} queries")
    labels, first_seen, inverse, counts = np.unique(
        np.array([str(stratum) for stratum in strata], dtype=str),
        return_index=True,
        return_inverse=True,
        return_counts=True,
    )
    by_appearance = np.argsort(first_seen, kind="stable")

    overall: dict[str, Any] = {}
    per_stratum: dict[str, dict[str, Any]] = {str(labels[i]): {} for i in by_appearance}
    for name, array in values.items():
        array = np.asarray(array, dtype=np.float64)
        summed = name in totals
        if summed:
            overall[name] = float(array.sum())
        else:
            overall[name] = float(array.mean()) if num_queries else 0.0
        sums = np.bincount(inverse, weights=array, minlength=len(labels))
        for i in by_appearance:
            per_stratum[str(labels[i])][name] = float(sums[i] if summed else sums[i] / counts[i])
    overall["n"] = num_queries
    for i in by_appearance:
        per_stratum[str(labels[i])]["n"] = int(counts[i])
    return {"overall": overall, "strata": per_stratum}


def summed_names(specs: Sequence[MetricSpec]) -> list[str]:
    """The names among `specs` whose summary is a sum (`Metric.summary`), for `aggregate`."""
    return [spec.name for spec in specs if spec.metric.summary == "sum"]


def score_trec_files(
    qrels_path: Path,
    run_path: Path,
    metric_names: Sequence[str] | None,
    complete: bool = False,
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> tuple[list[str], dict[str, np.ndarray], dict[str, Any]]:
    """Score a TREC run file against a TREC qrels file, as trec_eval does.

    By default only queries in both the run and the qrels are scored (trec_eval's default);
    `complete=True` scores every qrels query, a query missing from the run scoring as an empty
    ranking (trec_eval ``-c``). `relevance_level` and `judged_only` are trec_eval's ``-l`` and
    ``-J`` (see `judge_rankings`). Queries come sorted by id, as trec_eval lists them. Returns
    ``(query_ids, per-query values by metric name, overall means with "n")``; metrics whose
    summary is a sum (num_ret, ...) are totals, as in trec_eval's "all" line.
    """
    from recall_kit.measure.trec import read_qrels, read_run

    relevance_level = check_relevance_level(relevance_level)
    specs = resolve_metrics(metric_names)
    qrels = read_qrels(Path(qrels_path))
    run = read_run(Path(run_path))
    if complete:
        query_ids = sorted(qrels)
    else:
        query_ids = sorted(set(qrels) & set(run))
    rankings = [[hit.id for hit in run.get(query_id, ())] for query_id in query_ids]
    data = judge_rankings(
        query_ids, rankings, qrels, relevance_level=relevance_level, judged_only=judged_only
    )
    values = evaluate(data, specs)
    overall = aggregate(values, ["all"] * len(query_ids), summed_names(specs))["overall"]
    return query_ids, values, overall
