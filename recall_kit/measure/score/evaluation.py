"""Scoring: per-query values of joined rankings, their means; rankings, TREC files and Python runs scored.

The join of rankings with qrels is `recall_kit.measure.score.join`'s, metric names (parsing,
aliases, trec_eval's sets) `recall_kit.measure.score.metric_names`'s, runs and qrels given as Python
mappings `recall_kit.measure.score.in_memory`'s; the public names of the first two are re-exported
here for callers that import them from this module.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recall_kit.errors import OptionError
from recall_kit.measure.score.in_memory import as_qrels, as_rankings
from recall_kit.measure.score.join import check_relevance_level, judge_rankings, judge_tables
from recall_kit.measure.score.metric_names import (
    MAX_CUTOFF,
    TREC_EVAL_SETS,
    MetricSpec,
    canonical_metric_name,
    metric_aliases,
    resolve_metrics,
    trec_eval_names_missing,
)
from recall_kit.measure.score.trec import TrecTable
from recall_kit.types import TIE_PRECISIONS, JudgedRankings, Qrels


def metric_values(data: JudgedRankings, specs: Sequence[MetricSpec]) -> dict[str, np.ndarray]:
    """Per-query values (float64, one per query of `data`) by metric name, in `specs` order."""
    return {spec.name: spec.compute(data) for spec in specs}


def aggregate(
    values: dict[str, np.ndarray], strata: Sequence[str], totals: Collection[str] | Mapping[str, str] = ()
) -> dict[str, Any]:
    """Macro averages: over all queries, and per stratum (strata in order of first appearance).

    Returns ``{"overall": {name: mean, ..., "n": Q}, "strata": {stratum: {name: mean, ..., "n":
    count}}}`` with plain Python numbers. With no queries every mean is 0.0 and ``n`` is 0.
    `totals` names the metrics whose summary is not the arithmetic mean (see `summed_names`): a
    collection of names is summed (counts such as ``num_ret``, as trec_eval sums them); a mapping
    gives each name its `Metric.summary`, "sum" or "geometric" (``gm_map``: its per-query values
    are logs, as trec_eval's; the summary is exp of their mean, the geometric mean).
    """
    num_queries = len(strata)
    for name, array in values.items():
        if len(array) != num_queries:
            raise ValueError(f"{name!r} has {len(array)} values for {num_queries} queries")
    kinds = dict(totals) if isinstance(totals, Mapping) else dict.fromkeys(totals, "sum")
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
        kind = kinds.get(name, "mean")  # "geometric": the values are logs; exp of their mean
        summed = kind == "sum"
        if summed:
            overall[name] = float(array.sum())
        else:
            overall[name] = float(array.mean()) if num_queries else 0.0
        sums = np.bincount(inverse, weights=array, minlength=len(labels))
        for i in by_appearance:
            per_stratum[str(labels[i])][name] = float(sums[i] if summed else sums[i] / counts[i])
        if kind == "geometric":
            overall[name] = math.exp(overall[name]) if num_queries else 0.0
            for i in by_appearance:
                per_stratum[str(labels[i])][name] = math.exp(per_stratum[str(labels[i])][name])
    overall["n"] = num_queries
    for i in by_appearance:
        per_stratum[str(labels[i])]["n"] = int(counts[i])
    return {"overall": overall, "strata": per_stratum}


def summed_names(specs: Sequence[MetricSpec]) -> dict[str, str]:
    """The names among `specs` whose summary is not a mean, with it (`Metric.summary`: "sum" for
    counts, "geometric" for gm_map), for `aggregate`."""
    return {spec.name: spec.metric.summary for spec in specs if spec.metric.summary != "mean"}


def depth_warnings(specs: Sequence[MetricSpec], deepest: int, where: str) -> list[str]:
    """One sentence when a metric's cutoff lies past the deepest ranking of `where`.

    Such a metric counts only the documents that are there, so it equals the same metric at
    `deepest`: say so rather than let the two read as two measurements.
    """
    beyond = [spec.name for spec in specs if spec.rank_cutoff is not None and spec.rank_cutoff > deepest]
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
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> RunScores:
    """Score ranked ids (best first, by query id) against `qrels`, as trec_eval does.

    By default only queries in both are scored (trec_eval's default); `complete=True` scores
    every qrels query, a query missing from `rankings` scoring as an empty ranking (trec_eval
    ``-c``). A query with no qrels is never scored (trec_eval skips it too). `relevance_level`
    and `judged_only` are trec_eval's ``-l`` and ``-J`` (see `judge_rankings`); counts such as
    num_ret are summed over queries, as trec_eval's "all" line does.
    """
    relevance_level = check_relevance_level(relevance_level)
    query_ids = sorted(qrels) if complete else sorted(set(qrels) & set(rankings))
    ranked = [list(rankings.get(query_id, ())) for query_id in query_ids]
    data = judge_rankings(query_ids, ranked, qrels, complete=True,
                          relevance_level=relevance_level, judged_only=judged_only)
    values = metric_values(data, specs)
    overall = aggregate(values, ["all"] * len(query_ids), summed_names(specs))["overall"]
    if judged_only:
        where += " once -J left only judged documents"
    deepest = int(data.lengths.max()) if len(query_ids) else 0
    warnings = depth_warnings(specs, deepest, where) if ranked else []
    return RunScores(query_ids, values, overall, warnings)


def score_run_files(
    qrels_path: Path,
    run_paths: Sequence[Path],
    metric_names: Sequence[str] | None,
    complete: bool = False,
    ties: str = "float32",
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
    depth: int | None = None,
) -> list[RunScores]:
    """Score TREC run files against one TREC qrels file, as trec_eval does (see `score_rankings`).

    Each ranking is in trec_eval's order: score descending, ties by document id descending, scores
    compared at float32 precision as trec_eval <= 9 and pytrec_eval do; ``ties="float64"``
    compares them as doubles, as trec_eval 10 does. `relevance_level` and `judged_only` are
    trec_eval's ``-l`` and ``-J`` (see `judge_rankings`), `depth` its ``-M`` (each query's first
    `depth` documents only); counts such as num_ret are summed over queries, as in trec_eval's
    "all" line. A run sharing no query with the qrels (or an empty file) raises `DatasetError`,
    as trec_eval exits 7; names of trec_eval measure sets (``all_trec``) that hold measures
    recall-kit does not compute add a warning naming them.
    """
    from recall_kit.errors import DatasetError
    from recall_kit.measure.score.trec import read_qrels, read_qrels_table, read_run, read_run_table

    if ties not in TIE_PRECISIONS:
        raise OptionError(f"--ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}.")
    relevance_level = check_relevance_level(relevance_level)
    specs = resolve_metrics(metric_names)
    missing = trec_eval_names_missing(metric_names)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise OptionError(f"-M (the depth scored) must be a whole number >= 1, got {depth!r}.")
    qrels = read_qrels_table(Path(qrels_path))
    scores = []
    for run_path in run_paths:
        run = read_run_table(Path(run_path))
        try:
            query_ids, data = judge_tables(run, qrels, complete=complete, ties=ties,
                                           relevance_level=relevance_level, judged_only=judged_only,
                                           depth=depth)
        except ValueError as error:
            # The fast readers do not track line numbers: the exact readers find the line at fault.
            read_qrels(Path(qrels_path))
            read_run(Path(run_path))
            raise DatasetError(str(error)) from None
        _check_something_to_score(Path(qrels_path), qrels, Path(run_path), run, query_ids, complete)
        del run  # the file's rows, joined: freed before the measures' temporaries
        values = metric_values(data, specs)
        overall = aggregate(values, ["all"] * len(query_ids), summed_names(specs))["overall"]
        # -J and -M cut the rankings before scoring: the depth left is theirs, not the file's.
        where = f"the deepest ranking in {Path(run_path).name}" + (
            f" cut at -M {depth}" if depth is not None else "") + (
            " once -J left only judged documents" if judged_only else "")
        deepest = int(data.lengths.max()) if len(query_ids) else 0
        warnings = depth_warnings(specs, deepest, where) if query_ids else []
        if missing:
            warnings.append(f"not computed (no recall-kit measure; see docs/trec-eval.md): {', '.join(missing)}")
        scores.append(RunScores(query_ids, values, overall, warnings))
    return scores


def _check_something_to_score(
    qrels_path: Path, qrels: TrecTable, run_path: Path, run: TrecTable, scored: Sequence[str], complete: bool
) -> None:
    """Refuse, in one line, a run and qrels that share no query: trec_eval exits 7 ("No queries
    with both results and relevance info") rather than print all-zero means over n = 0."""
    from recall_kit.errors import DatasetError

    if len(qrels.query_ids) == 0:
        raise DatasetError(f"{qrels_path.name}: holds no judgment: nothing to score against.")
    if len(run.query_ids) == 0:
        raise DatasetError(f"{run_path.name}: holds no result line: nothing to score.")
    if scored and not complete:
        return
    if not complete or not np.isin(run.query_ids, qrels.query_ids).any():
        raise DatasetError(
            f"{run_path.name}: none of its {len(np.unique(run.query_ids))} queries is in "
            f"{qrels_path.name} ({len(np.unique(qrels.query_ids))} queries): nothing to score "
            "(trec_eval: 'No queries with both results and relevance info')."
        )


def score_trec_files(
    qrels_path: Path,
    run_path: Path,
    metric_names: Sequence[str] | None,
    complete: bool = False,
    ties: str = "float32",
    *,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> RunScores:
    """Score one TREC run file against a TREC qrels file (see `score_run_files`).

    Queries come sorted by id, as trec_eval lists them. The result holds `query_ids`, `values`
    (per query, by metric name), `overall` (means, with "n") and `warnings` (cutoffs past the
    run's deepest ranking).
    """
    return score_run_files(qrels_path, [run_path], metric_names, complete=complete, ties=ties,
                           relevance_level=relevance_level, judged_only=judged_only)[0]


def evaluate_run(
    qrels: Mapping[Any, Any],
    run: Mapping[Any, Any],
    metrics: Sequence[str] | str | None = None,
    *,
    per_query: bool = False,
    complete: bool = False,
    ties: str = "float32",
    relevance_level: int = 1,
    judged_only: bool = False,
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
    `relevance_level` and `judged_only` are trec_eval's ``-l`` and ``-J`` (pytrec_eval's
    ``relevance_level`` and ``judged_docs_only_flag``); metric names may be trec_eval's or
    ir_measures' (``"ndcg_cut_10"``, ``"nDCG@10"``), the result keeps recall-kit's.
    """
    import warnings as warnings_module

    from recall_kit.errors import RecallKitWarning

    if ties not in TIE_PRECISIONS:
        raise ValueError(f"ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}")
    specs = resolve_metrics([metrics] if isinstance(metrics, str) else metrics)
    rankings = as_rankings(run, ties)
    scores = score_rankings(as_qrels(qrels), rankings, specs, complete=complete,
                            relevance_level=check_relevance_level(relevance_level, error=ValueError),
                            judged_only=judged_only)
    if not set(scores.query_ids) & {query_id for query_id, ranking in rankings.items() if ranking}:
        warnings_module.warn(
            "no query has both results and judgments: every value is 0 over n = 0 queries "
            "(trec_eval exits with an error here)", RecallKitWarning, stacklevel=2)
    missing = trec_eval_names_missing([metrics] if isinstance(metrics, str) else metrics)
    if missing:
        warnings_module.warn(f"not computed (no recall-kit measure): {', '.join(missing)}", RecallKitWarning,
                             stacklevel=2)
    for warning in scores.warnings:
        warnings_module.warn(warning, RecallKitWarning, stacklevel=2)
    if per_query:
        return {
            query_id: {name: float(array[row]) for name, array in scores.values.items()}
            for row, query_id in enumerate(scores.query_ids)
        }
    return {name: float(scores.overall[name]) for name in scores.values}


__all__ = [  # the metric-name API and the join re-exported, and this module's own
    "MAX_CUTOFF", "TREC_EVAL_SETS", "MetricSpec", "RunScores", "aggregate", "canonical_metric_name",
    "check_relevance_level", "depth_warnings", "evaluate_run", "judge_rankings", "judge_tables", "metric_values",
    "metric_aliases", "resolve_metrics", "score_rankings", "score_run_files", "score_trec_files",
    "summed_names", "trec_eval_names_missing",
]
