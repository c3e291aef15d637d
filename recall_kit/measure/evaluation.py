"""Scoring: metric names to metrics, rankings joined with qrels, per-query values, their means."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.errors import OptionError
from recall_kit.types import TIE_PRECISIONS, Hit, JudgedRankings, Metric, Qrels, sort_hits

# The order the default metric set is shown in; families not listed follow by name. Only an
# order: which families exist, and which are defaults, comes from the registry.
_DEFAULT_DISPLAY_ORDER = ("recall", "ndcg", "mrr", "map", "judged")

_NAME = re.compile(r"^(?P<family>[^@\s]+)(?:@(?P<cutoff>.*))?$")

#: The largest cutoff a metric name may carry: far past any ranking, and within every index type.
MAX_CUTOFF = 2**31 - 1


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
    if int(raw) > MAX_CUTOFF:
        raise OptionError(
            f"Cutoff in metric {name!r} is too large: at most {MAX_CUTOFF} (far past any ranking)."
        )
    return match.group("family"), int(raw)


def resolve_metrics(names: Sequence[str] | None) -> list[MetricSpec]:
    """Turn metric names (``recall@10``, ``mrr``, ``map@100``) into specs, in order, no repeats.

    `None` or an empty sequence gives the defaults: every registered family's `default_cutoffs`.
    An unknown family raises `UnknownMetricError` (listing what is registered); a cutoff on a
    family that takes none, a missing required cutoff, or a malformed cutoff raises `OptionError`.
    """
    from recall_kit import registry

    if not names:
        return _default_specs(registry.metrics.all())
    specs: list[MetricSpec] = []
    seen: set[str] = set()
    for raw in names:
        family, cutoff = _parse(raw)
        metric = registry.metrics.get(family).obj
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
    complete: bool = False,
) -> JudgedRankings:
    """Join rankings with relevance judgments into the dense arrays the metrics read.

    `rankings[i]` is query `query_ids[i]`'s ranking as document ids (strings), already in final
    rank order (trec_eval's order for a run: see `recall_kit.types.sort_hits`); it is cut at
    `depth` when one is given. A query missing from `qrels` is left out, as trec_eval and
    pytrec_eval leave it out (nothing says what it should have found): the returned `query_ids`
    say which queries were kept. With `complete=True` it is kept with no judgments, so every
    metric scores it 0 (a query with judgments but no relevant document is always kept). A
    document id twice in one ranking raises `ValueError`, as trec_eval refuses duplicates.
    """
    if len(query_ids) != len(rankings):
        raise ValueError(f"{len(query_ids)} query ids but {len(rankings)} rankings")
    if depth is not None:
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        rankings = [ranking[:depth] for ranking in rankings]
    num_queries = len(query_ids)
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=num_queries)
    total = int(lengths.sum())
    width = int(lengths.max()) if num_queries else 0

    # One set per ranking, built in C: cheaper than it looks, and trec_eval refuses duplicates.
    distinct = np.fromiter(map(len, map(set, rankings)), dtype=np.int64, count=num_queries)
    if total and (distinct != lengths).any():
        row = int(np.flatnonzero(distinct != lengths)[0])
        repeated = _first_repeat(rankings[row])
        raise ValueError(f"ranking of query {query_ids[row]!r} holds document {repeated!r} twice")
    if not complete and any(query_id not in qrels for query_id in query_ids):
        kept = [i for i, query_id in enumerate(query_ids) if query_id in qrels]
        query_ids = [query_ids[i] for i in kept]
        rankings = [rankings[i] for i in kept]
        num_queries, lengths = len(kept), lengths[kept]
        total = int(lengths.sum())
        width = int(lengths.max()) if num_queries else 0

    empty: dict[str, int] = {}
    judgments = [qrels.get(query_id, empty) for query_id in query_ids]

    # Every ranked cell's grade, NaN where unjudged: dict.get runs in C through map(), so the
    # only per-query Python work is building one iterator.
    nan = float("nan")
    cells = np.fromiter(
        chain.from_iterable(
            map(judged.get, ranking, repeat(nan)) for judged, ranking in zip(judgments, rankings)
        ),
        dtype=np.float64,
        count=total,
    )
    judged_cells = ~np.isnan(cells)
    grade_cells = np.where(judged_cells, np.maximum(cells, 0.0), 0.0).astype(np.int32)
    grades = np.zeros((num_queries, width), dtype=np.int32)
    judged = np.zeros((num_queries, width), dtype=bool)
    if total == num_queries * width:
        grades[...] = grade_cells.reshape(num_queries, width)
        judged[...] = judged_cells.reshape(num_queries, width)
    else:
        filled = np.arange(width) < lengths[:, None]
        grades[filled] = grade_cells
        judged[filled] = judged_cells

    # The ideal ranking's gains: each query's positive grades, sorted descending.
    sizes = np.fromiter(map(len, judgments), dtype=np.int64, count=num_queries)
    all_grades = np.fromiter(
        chain.from_iterable(judged.values() for judged in judgments),
        dtype=np.int64,
        count=int(sizes.sum()),
    )
    owner = np.repeat(np.arange(num_queries), sizes)
    positive = all_grades >= 1
    pos_grades, pos_owner = all_grades[positive], owner[positive]
    num_relevant = np.bincount(pos_owner, minlength=num_queries).astype(np.int64)
    order = np.lexsort((-pos_grades, pos_owner))
    pos_grades, pos_owner = pos_grades[order], pos_owner[order]
    starts = np.cumsum(num_relevant) - num_relevant
    ideal_grades = np.zeros((num_queries, int(num_relevant.max()) if num_queries else 0), np.int32)
    ideal_grades[pos_owner, np.arange(len(pos_owner)) - starts[pos_owner]] = pos_grades

    return JudgedRankings(
        query_ids=list(query_ids),
        grades=grades,
        judged=judged,
        lengths=lengths,
        num_relevant=num_relevant,
        ideal_grades=ideal_grades,
    )


def evaluate(data: JudgedRankings, specs: Sequence[MetricSpec]) -> dict[str, np.ndarray]:
    """Per-query values (float64, one per query of `data`) by metric name, in `specs` order."""
    return {spec.name: spec.compute(data) for spec in specs}


def aggregate(values: dict[str, np.ndarray], strata: Sequence[str]) -> dict[str, Any]:
    """Macro averages: over all queries, and per stratum (strata in order of first appearance).

    Returns ``{"overall": {name: mean, ..., "n": Q}, "strata": {stratum: {name: mean, ..., "n":
    count}}}`` with plain Python numbers. With no queries every mean is 0.0 and ``n`` is 0.
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
        overall[name] = float(array.mean()) if num_queries else 0.0
        sums = np.bincount(inverse, weights=array, minlength=len(labels))
        for i in by_appearance:
            per_stratum[str(labels[i])][name] = float(sums[i] / counts[i])
    overall["n"] = num_queries
    for i in by_appearance:
        per_stratum[str(labels[i])]["n"] = int(counts[i])
    return {"overall": overall, "strata": per_stratum}


def depth_warnings(specs: Sequence[MetricSpec], deepest: int, where: str) -> list[str]:
    """One sentence when a metric's cutoff lies past the deepest ranking of `where`.

    Such a metric counts only the documents that are there, so it equals the same metric at
    `deepest`: say so rather than let the two read as two measurements.
    """
    beyond = [spec.name for spec in specs if spec.cutoff is not None and spec.cutoff > deepest]
    if not beyond:
        return []
    return [
        f"{', '.join(beyond)}: cutoff past {where} ({deepest} documents); "
        f"{'it counts' if len(beyond) == 1 else 'they count'} only the documents there, "
        f"as at @{deepest}."
    ]


@dataclass
class RunScores:
    """One run's scores: the queries scored (sorted by id), per-query values, their means."""

    query_ids: list[str]
    values: dict[str, np.ndarray]
    overall: dict[str, Any]
    warnings: list[str]


def score_rankings(
    qrels: Qrels,
    rankings: Mapping[str, Sequence[str]],
    specs: Sequence[MetricSpec],
    complete: bool = False,
    where: str = "the run's deepest ranking",
) -> RunScores:
    """Score ranked ids (best first, by query id) against `qrels`, as trec_eval does.

    By default only queries in both are scored (trec_eval's default); `complete=True` scores
    every qrels query, a query missing from `rankings` scoring as an empty ranking (trec_eval
    ``-c``). A query with no qrels is never scored (trec_eval skips it too).
    """
    query_ids = sorted(qrels) if complete else sorted(set(qrels) & set(rankings))
    ranked = [list(rankings.get(query_id, ())) for query_id in query_ids]
    values = evaluate(judge_rankings(query_ids, ranked, qrels, complete=True), specs)
    overall = aggregate(values, ["all"] * len(query_ids))["overall"]
    warnings = depth_warnings(specs, max(map(len, ranked)), where) if ranked else []
    return RunScores(query_ids, values, overall, warnings)


def score_run_files(
    qrels_path: Path,
    run_paths: Sequence[Path],
    metric_names: Sequence[str] | None,
    complete: bool = False,
    ties: str = "float32",
) -> list[RunScores]:
    """Score TREC run files against one TREC qrels file, as trec_eval does (see `score_rankings`).

    Each ranking is in trec_eval's order: score descending, ties by document id descending, scores
    compared at float32 precision as trec_eval <= 9 and pytrec_eval do; ``ties="float64"``
    compares them as doubles, as trec_eval 10 does.
    """
    from recall_kit.measure.trec import read_qrels, read_run

    if ties not in TIE_PRECISIONS:
        raise OptionError(f"--ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}.")
    specs = resolve_metrics(metric_names)
    qrels = read_qrels(Path(qrels_path))
    scores = []
    for run_path in run_paths:
        run = read_run(Path(run_path))  # float32 order
        rankings = {
            query_id: [hit.id for hit in (sort_hits(hits, ties) if ties != "float32" else hits)]
            for query_id, hits in run.items()
        }
        where = f"the deepest ranking in {Path(run_path).name}"
        scores.append(score_rankings(qrels, rankings, specs, complete=complete, where=where))
    return scores


def score_trec_files(
    qrels_path: Path,
    run_path: Path,
    metric_names: Sequence[str] | None,
    complete: bool = False,
    ties: str = "float32",
) -> RunScores:
    """Score one TREC run file against a TREC qrels file (see `score_run_files`).

    Queries come sorted by id, as trec_eval lists them. The result holds `query_ids`, `values`
    (per query, by metric name), `overall` (means, with "n") and `warnings` (cutoffs past the
    run's deepest ranking).
    """
    return score_run_files(qrels_path, [run_path], metric_names, complete=complete, ties=ties)[0]


def _as_qrels(qrels: Mapping[Any, Any]) -> Qrels:
    out: Qrels = {}
    for query_id, judged in qrels.items():
        if isinstance(judged, Mapping):
            grades = {}
            for doc, grade in judged.items():
                if isinstance(grade, bool) or not float(grade).is_integer():
                    raise ValueError(f"qrels of query {query_id!r}: grade {grade!r} of {doc!r} is not an integer")
                grades[str(doc)] = int(grade)
            out[str(query_id)] = grades
        elif isinstance(judged, (str, bytes)) or not isinstance(judged, Iterable):
            raise ValueError(
                f"qrels of query {query_id!r}: expected {{doc_id: grade}} or a list of relevant ids"
            )
        else:
            out[str(query_id)] = {str(doc): 1 for doc in judged}
    return out


def _as_rankings(run: Mapping[Any, Any], ties: str) -> dict[str, list[str]]:
    rankings: dict[str, list[str]] = {}
    for query_id, answer in run.items():
        if isinstance(answer, Mapping):
            hits = [Hit(str(doc), float(score)) for doc, score in answer.items()]
            if any(math.isnan(hit.score) for hit in hits):
                raise ValueError(f"run of query {query_id!r}: a score is NaN")
            rankings[str(query_id)] = [hit.id for hit in sort_hits(hits, ties)]
        elif isinstance(answer, (str, bytes)) or not isinstance(answer, Iterable):
            raise ValueError(
                f"run of query {query_id!r}: expected {{doc_id: score}} or a list of ids, best first"
            )
        else:
            rankings[str(query_id)] = [str(doc) for doc in answer]
    return rankings


def evaluate_run(
    qrels: Mapping[Any, Any],
    run: Mapping[Any, Any],
    metrics: Sequence[str] | str | None = None,
    *,
    per_query: bool = False,
    complete: bool = False,
    ties: str = "float32",
) -> dict[str, Any]:
    """Score an in-memory run against in-memory qrels: ``recall_kit.evaluate``.

    `qrels` is ``{query_id: {doc_id: grade}}`` (pytrec_eval's shape; grade >= 1 is relevant, 0
    judged not relevant) or ``{query_id: [relevant ids]}``. `run` is ``{query_id: {doc_id:
    score}}`` (ranked as trec_eval ranks: score descending, ties by id descending, scores compared
    at float32 precision unless ``ties="float64"``, trec_eval 10's way) or ``{query_id: [doc_id,
    ...]}`` already best first. Ids are compared as strings. `metrics` are recall-kit metric
    names (``"recall@10"``, ``["ndcg@10", "mrr"]``; default: the default set).

    As trec_eval: only queries in both are scored; `complete=True` scores every qrels query, a
    query the run lacks scoring 0 (``-c``); a query with no qrels is never scored. Returns the
    means ``{metric: value}``, or with `per_query=True` ``{query_id: {metric: value}}`` as
    pytrec_eval's ``RelevanceEvaluator.evaluate`` does. A cutoff past the run's deepest ranking
    raises no error but a `RecallKitWarning` saying it equals the metric at that depth.
    """
    import warnings as warnings_module

    from recall_kit.errors import RecallKitWarning

    if ties not in TIE_PRECISIONS:
        raise ValueError(f"ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}")
    specs = resolve_metrics([metrics] if isinstance(metrics, str) else metrics)
    scores = score_rankings(_as_qrels(qrels), _as_rankings(run, ties), specs, complete=complete)
    for warning in scores.warnings:
        warnings_module.warn(warning, RecallKitWarning, stacklevel=2)
    if per_query:
        return {
            query_id: {name: float(array[row]) for name, array in scores.values.items()}
            for row, query_id in enumerate(scores.query_ids)
        }
    return {name: float(scores.overall[name]) for name in scores.values}
