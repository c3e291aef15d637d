"""`recall-kit score`: TREC run files scored against TREC qrels as trec_eval scores them and,
with several runs, each compared with the first as `compare` compares result files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recall_kit.decide.compare import compare_values
from recall_kit.decide.compare_report import delta_table, four_places
from recall_kit.errors import RecallKitError, ResultFileError
from recall_kit.measure.evaluation import RunScores, canonical_metric_name, score_run_files
from recall_kit.types import Report, ReportTable


def score_files(
    qrels_path: Path,
    run_paths: Sequence[Path],
    metrics: Sequence[str] | None = None,
    *,
    complete: bool = False,
    ties: str = "float32",
    relevance_level: int = 1,
    judged_only: bool = False,
    depth: int | None = None,
    per_query: bool = False,
    primary: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Report:
    """Score TREC run files against a TREC qrels file and report them (`recall-kit score`).

    Scoring is `recall_kit.measure.evaluation.score_run_files` (trec_eval's order, ``-c``, ``-l``,
    ``-J``, ``-M`` as `depth`, float32 or float64 ties); with several runs each is compared with the first, Holm's
    correction over the `primary` metrics (trec_eval and ir_measures names accepted; default: the
    first metric). The report's `data` is what ``score --json`` writes.
    """
    if n_resamples < 1:
        raise RecallKitError(f"--bootstrap must be at least 1, got {n_resamples}.")
    scores = score_run_files(qrels_path, run_paths, metrics, complete=complete, ties=ties,
                             relevance_level=relevance_level, judged_only=judged_only, depth=depth)
    primaries = [canonical_metric_name(name) for name in primary or []] or None
    report = score_report(qrels_path, run_paths, scores, complete=complete, ties=ties, per_query=per_query,
                          primary=primaries, n_resamples=n_resamples, seed=seed)
    report.data.update(relevance_level=relevance_level, judged_only=judged_only, depth=depth)
    return report


def run_labels(paths: Sequence[Path]) -> list[str]:
    """A label per run file: its name, or its path where two runs share a name."""
    names = [Path(path).name for path in paths]
    return [name if names.count(name) == 1 else str(path) for name, path in zip(names, paths, strict=True)]


def score_report(
    qrels_path: Path,
    run_paths: Sequence[Path],
    scores: Sequence[RunScores],
    complete: bool = False,
    ties: str = "float32",
    per_query: bool = False,
    primary: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Report:
    """A report of scored runs: one table of every run's means (and per-query values when asked);
    with several runs, each compared with the first on their shared queries, as `compare` does."""
    labels = run_labels(run_paths)
    names = list(scores[0].values)
    notes = [f"{label}: {warning}" if len(labels) > 1 else warning
             for label, run in zip(labels, scores, strict=True) for warning in run.warnings]

    def per_query_data(run: RunScores) -> dict[str, dict[str, float]]:
        return {qid: {name: float(run.values[name][i]) for name in names} for i, qid in enumerate(run.query_ids)}

    def value_rows(run: RunScores) -> list[list[Any]]:
        rows = [["all", len(run.query_ids), *(four_places(run.overall[name]) for name in names)]]
        if per_query:
            rows += [[qid, 1, *(four_places(run.values[name][i]) for name in names)] for i, qid in enumerate(run.query_ids)]
        return rows

    settings = {"qrels": str(qrels_path), "complete": complete, "ties": ties}
    if len(scores) == 1:
        (run,) = scores
        data = {**settings, "run": str(run_paths[0]), "overall": run.overall,
                "queries": per_query_data(run), "warnings": notes}
        table = ReportTable(title=f"{Path(run_paths[0]).name} against {Path(qrels_path).name}",
                            headers=["query", "n", *names], rows=value_rows(run))
        return Report(title="recall-kit score", tables=[table], notes=notes, data=data)

    rows = [[label, *row] for label, run in zip(labels, scores, strict=True) for row in value_rows(run)]
    table = ReportTable(title=f"{len(scores)} runs against {Path(qrels_path).name}",
                        headers=["run", "query", "n", *names], rows=rows)
    shared = set(scores[0].query_ids).intersection(*(run.query_ids for run in scores[1:]))
    query_ids = [qid for qid in scores[0].query_ids if qid in shared]
    if not query_ids:
        raise ResultFileError("The runs share no scored query: nothing to compare.")
    if any(len(run.query_ids) != len(query_ids) for run in scores):
        notes.insert(0, (
            f"The runs score different query sets: the comparison uses the {len(query_ids)} queries "
            "all of them answer (--complete scores every qrels query in every run)."
        ))
    rows_of = [[{qid: i for i, qid in enumerate(run.query_ids)}[qid] for qid in query_ids] for run in scores]
    matrices = {name: [run.values[name][rows] for run, rows in zip(scores, rows_of, strict=True)]
                for name in names}
    comparison = compare_values(labels, query_ids, None, matrices, primary=primary,
                                n_resamples=n_resamples, seed=seed)
    notes = list(comparison.warnings) + notes
    tables = [table] + [delta_table(comparison, label) for label in labels[1:]]
    data = {**settings, "runs": [{"run": str(path), "label": label, "overall": run.overall,
                                  "queries": per_query_data(run)}
                                 for path, label, run in zip(run_paths, labels, scores, strict=True)],
            "comparison": comparison.to_dict(), "warnings": notes}
    return Report(title="recall-kit score", tables=tables, notes=notes, data=data)
