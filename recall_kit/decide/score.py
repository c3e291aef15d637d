"""`recall-kit score` and `recall_kit.compare`: runs scored against qrels as trec_eval scores them
and, with several runs, each compared with the first as `compare` compares result files.

Both return a `ScoredRuns`: the typed outcome (per-run means and per-query values, the comparison,
the scoring settings); its `report()` is what the command prints, its `to_dict()` what
``score --json`` writes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from recall_kit.errors import DatasetError, OptionError, RecallKitError, ResultFileError
from recall_kit.measure.score.evaluation import RunScores, canonical_metric_name, score_run_files
from recall_kit.measure.score.metric_names import display_names
from recall_kit.reporting.formats import FOUR_PLACES, four_places
from recall_kit.types import Hit, Report, ReportTable

if TYPE_CHECKING:  # the comparison's modules are imported only when several runs are compared
    from recall_kit.decide.compare import Comparison


@dataclass(frozen=True)
class ScoredRun:
    """One run's scores: the queries scored (sorted by id, as trec_eval lists them), each query's
    value per metric, the means (no count mixed in: `n_queries`), and what to warn about."""

    label: str
    #: The run file scored, or the run's name when it was scored in memory.
    source: str
    query_ids: list[str]
    values: dict[str, np.ndarray]
    #: Metric name -> mean over the queries (a sum for counts such as num_ret).
    overall: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    #: The run's tag (its last line's sixth field, as trec_eval keeps it), for trec_eval's runid line.
    runid: str | None = None

    def __post_init__(self) -> None:
        # The scoring kernel's means carry trec_eval's query count as "n"; here it is n_queries.
        object.__setattr__(self, "overall", {name: value for name, value in self.overall.items() if name != "n"})

    def overall_document(self) -> dict[str, Any]:
        """The means as ``score --json`` writes them: each metric, then "n"."""
        return {**self.overall, "n": self.n_queries}

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def mean(self, metric: str) -> float:
        """The metric's mean (a sum for counts such as num_ret, as trec_eval's "all" line)."""
        return float(self.overall[canonical_metric_name(metric)])

    def per_query(self, metric: str) -> dict[str, float]:
        """query id -> the metric's value."""
        values = self.values[canonical_metric_name(metric)]
        return {query_id: float(values[i]) for i, query_id in enumerate(self.query_ids)}

    def queries(self) -> dict[str, dict[str, float]]:
        """query id -> metric -> value: what ``score --json`` writes per run."""
        # One matrix (float64, as float() of each value gives), its rows zipped with the names:
        # the per-value work stays in C.
        names = list(self.values)
        if not names:
            return {query_id: {} for query_id in self.query_ids}
        rows = np.column_stack([np.asarray(self.values[name], dtype=np.float64) for name in names]).tolist()
        return {query_id: dict(zip(names, row)) for query_id, row in zip(self.query_ids, rows, strict=True)}


@dataclass(frozen=True)
class ScoredRuns:
    """Runs scored against one set of qrels and, with several, each compared with the first on the
    queries they share (paired deltas, bootstrap intervals, p-values, Holm within the primary
    metrics; every pair with three runs or more): what `score_files` and `compare` return."""

    runs: list[ScoredRun]
    metrics: list[str]
    #: The qrels file, or None when the qrels were given in memory.
    qrels: str | None
    complete: bool = False
    ties: str = "float32"
    relevance_level: int = 1
    judged_only: bool = False
    depth: int | None = None
    #: Whether a trec_eval measure set holding ``runid`` was asked (``-m official``, ``-m all_trec``).
    runid_asked: bool = False
    #: recall-kit's name -> the name the tables show: the spelling the user asked by (trec_eval's,
    #: ir_measures'), see `display_names`. The JSON keeps recall-kit's names.
    labels: Mapping[str, str] = field(default_factory=dict)
    #: None with a single run.
    comparison: Comparison | None = None
    #: The comparison's warnings, then each run's (named by run when there are several).
    warnings: list[str] = field(default_factory=list)

    def run(self, label: str) -> ScoredRun:
        for run in self.runs:
            if run.label == label:
                return run
        raise KeyError(label)

    def to_dict(self) -> dict[str, Any]:
        """What ``score --json`` writes."""
        settings: dict[str, Any] = {"qrels": self.qrels, "complete": self.complete, "ties": self.ties}
        data: dict[str, Any]
        if self.comparison is None:
            (run,) = self.runs
            data = {**settings, "run": run.source, "overall": run.overall_document(), "queries": run.queries(),
                    "warnings": list(self.warnings)}
        else:
            data = {**settings, "runs": [{"run": run.source, "label": run.label, "overall": run.overall_document(),
                                          "queries": run.queries()} for run in self.runs],
                    "comparison": self.comparison.to_dict(), "warnings": list(self.warnings)}
        data.update(relevance_level=self.relevance_level, judged_only=self.judged_only, depth=self.depth)
        return data

    def trec_eval_text(self, per_query: bool = False) -> str:
        """trec_eval's own output lines for each run in turn (`score --report trec_eval`): each
        measure under the name trec_eval prints, in trec_eval's order (its measures.c table,
        whatever order they were asked in; a measure trec_eval lacks keeps recall-kit's name, last)."""
        from recall_kit.measure.score.metric_names import TREC_EVAL_PRINT_ORDER, resolve_metrics, trec_eval_name
        from recall_kit.reporting.trec_eval import TrecEvalMeasure, TrecEvalRun, trec_eval_text

        rank = {family: i for i, family in enumerate(TREC_EVAL_PRINT_ORDER)}
        keyed = []
        for position, spec in enumerate(resolve_metrics(self.metrics)):
            family, shown = trec_eval_name(spec) or ("", spec.name)
            summary = spec.metric.summary
            measure = TrecEvalMeasure(spec.name, shown, whole=summary == "sum",
                                      per_query=summary == "mean" or (summary == "sum" and spec.metric.name != "num_q"))
            keyed.append(((rank.get(family, len(rank)), position), measure))
        measures = [measure for _, measure in sorted(keyed, key=lambda item: item[0])]
        runs = [TrecEvalRun(run.runid if self.runid_asked else None, run.query_ids, run.values, run.overall)
                for run in self.runs]
        return trec_eval_text(runs, measures, per_query)

    def report(self, per_query: bool = False, width: int | None = None) -> Report:
        """One table of every run's means (and each query's values with `per_query`); with several
        runs, a table per challenger of its paired comparison with the first. Measures are headed by
        the names they were asked by; counts (num_ret, ...) show as whole numbers. Each query's
        values are a row of measures when the table fits in `width` characters (the terminal's
        width by default), else one row per query and measure."""
        from recall_kit.measure.score.metric_names import resolve_metrics

        names = self.metrics
        whole = {spec.name for spec in resolve_metrics(names) if spec.metric.summary == "sum"}
        heads = [self.labels.get(name, name) for name in names]

        def shown(name: str, value: float) -> str:
            return str(int(value)) if name in whole else four_places(value)

        def value_rows(run: ScoredRun) -> list[list[Any]]:
            rows = [["all", run.n_queries, *(shown(name, run.overall[name]) for name in names)]]
            if per_query and wide:  # formatted column by column, the loop over values in C
                rows += [list(row) for row in zip(run.query_ids, itertools.repeat(1), *columns(run))]
            return rows

        def columns(run: ScoredRun) -> list[list[str]]:
            """Each metric's per-query values as the table shows them, one column at a time."""
            return [list(map(str, np.asarray(run.values[name]).astype(np.int64).tolist())) if name in whole
                    else list(map(FOUR_PLACES, np.asarray(run.values[name], dtype=np.float64).tolist()))
                    for name in names]

        def long_rows(run: ScoredRun) -> list[list[Any]]:
            shown_columns = columns(run)
            return [[qid, head, column[i]] for i, qid in enumerate(run.query_ids)
                    for head, column in zip(heads, shown_columns, strict=True)]

        several = self.comparison is not None
        wide = not per_query or _fits(["run"] * several + ["query", "n", *heads], width)
        against = Path(self.qrels).name if self.qrels is not None else "the qrels"
        notes = list(self.warnings)
        if not several:
            (run,) = self.runs
            tables = [ReportTable(title=f"{Path(run.source).name} against {against}",
                                  headers=["query", "n", *heads], rows=value_rows(run))]
            if per_query and not wide:
                tables.append(ReportTable(title="per query", headers=["query", "measure", "value"], rows=long_rows(run)))
            return _ScoreReport(title="recall-kit score", tables=tables, notes=notes, data_of=self.to_dict,
                                trec_eval_of=lambda: self.trec_eval_text(per_query))
        rows = [[run.label, *row] for run in self.runs for row in value_rows(run)]
        tables = [ReportTable(title=f"{len(self.runs)} runs against {against}",
                              headers=["run", "query", "n", *heads], rows=rows)]
        if per_query and not wide:
            tables.append(ReportTable(title="per query", headers=["run", "query", "measure", "value"],
                                      rows=[[run.label, *row] for run in self.runs for row in long_rows(run)]))
        from recall_kit.decide.compare_report import delta_table

        assert self.comparison is not None
        tables += [delta_table(self.comparison, run.label) for run in self.runs[1:]]
        return _ScoreReport(title="recall-kit score", tables=tables, notes=notes, data_of=self.to_dict,
                            trec_eval_of=lambda: self.trec_eval_text(per_query))


def _fits(headers: Sequence[str], width: int | None) -> bool:
    """Whether a table with these columns (values of up to 10 characters) fits in `width`
    characters, the terminal's by default (80 where there is none)."""
    import shutil

    limit = width if width is not None else shutil.get_terminal_size((80, 24)).columns
    return sum(max(len(header), 10) + 2 for header in headers) <= limit


class _ScoreReport(Report):
    """A `Report` whose `data` (``score --json``'s document, every query's values) is built when a
    reporter first reads it: the table printed by default never does, and building it costs about
    as much as judging the rankings at 20,000 queries."""

    def __init__(self, *, data_of: Callable[[], dict[str, Any]] | None = None,
                 trec_eval_of: Callable[[], str] | None = None, **fields: Any) -> None:
        super().__init__(**fields)  # `data`, when given (dataclasses.replace gives it), is set here
        if data_of is not None:
            self._data_of: Callable[[], dict[str, Any]] | None = data_of
        #: trec_eval's own output lines, made when the trec_eval reporter asks for them.
        self.trec_eval_text = trec_eval_of

    @property  # type: ignore[override]
    def data(self) -> dict[str, Any]:
        if self._data_of is not None:
            self._data, self._data_of = self._data_of(), None
        return self._data

    @data.setter
    def data(self, value: dict[str, Any]) -> None:
        self._data, self._data_of = value, None


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
    primary: Sequence[str] | None = None,
    test: str = "randomisation",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> ScoredRuns:
    """Score TREC run files against a TREC qrels file and compare them (`recall-kit score`).

    Scoring is `recall_kit.measure.score.evaluation.score_run_files` (trec_eval's order, ``-c``, ``-l``,
    ``-J``, ``-M`` as `depth`, float32 or float64 ties); with several runs each is compared with the first, Holm's
    correction over the `primary` metrics (trec_eval and ir_measures names accepted; default: the
    first metric), the p-values from `test` (a key of `recall_kit.decide.stats.PAIRED_TESTS`).
    ``.report()`` is what the command prints, ``.to_dict()`` what ``score --json`` writes.
    """
    _check_resamples(n_resamples)
    scores = score_run_files(qrels_path, run_paths, metrics, complete=complete, ties=ties,
                             relevance_level=relevance_level, judged_only=judged_only, depth=depth)
    labels = run_labels(run_paths)
    runs = [ScoredRun(label, str(path), run.query_ids, run.values, run.overall, run.warnings, run_tag(path))
            for label, path, run in zip(labels, run_paths, scores, strict=True)]
    return scored_runs(runs, str(qrels_path), complete=complete, ties=ties, relevance_level=relevance_level,
                       judged_only=judged_only, depth=depth, primary=primary, test=test,
                       n_resamples=n_resamples, seed=seed, runid_asked=_asks_runid(metrics),
                       labels=display_names(list(metrics or ())))


def compare(
    qrels: Mapping[Any, Any],
    runs: Mapping[str, Mapping[Any, Any]],
    metrics: Sequence[str] | str | None = None,
    *,
    complete: bool = False,
    ties: str = "float32",
    relevance_level: int = 1,
    judged_only: bool = False,
    depth: int | None = None,
    primary: Sequence[str] | None = None,
    test: str = "randomisation",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> ScoredRuns:
    """Score runs held in memory against qrels held in memory, and compare each with the first:
    ``recall_kit.compare``, as ranx's ``compare``; what `score_files` does for TREC files.

    `qrels` is ``{query_id: {doc_id: grade}}`` (or ``{query_id: [relevant ids]}``); `runs` maps a
    name to a run, ``{query_id: {doc_id: score}}`` or ``{query_id: [(doc_id, score) or Hit, ...]}``,
    ranked as trec_eval ranks (score descending, ties by id descending, at float32 precision unless
    ``ties="float64"``); ``{query_id: [doc_id, ...]}`` is taken as ranked already. `depth` scores
    each query's first `depth` documents (trec_eval ``-M``); `complete`, `relevance_level` and
    `judged_only` are ``-c``, ``-l`` and ``-J``. With several runs each is compared with the
    first on the queries they share (every pair too with three or more): the p-values from `test`
    (``"randomisation"``, ``"bootstrap"``, ``"t-test"``, ``"wilcoxon"``, ``"tukey"``), Holm's
    correction over the `primary` metrics (default: the first). Values equal ``score_files`` on
    the same runs written as TREC files.
    """
    from recall_kit.measure.score.evaluation import (
        _as_qrels,
        check_relevance_level,
        resolve_metrics,
        score_rankings,
        trec_eval_names_missing,
    )
    from recall_kit.types import TIE_PRECISIONS

    _check_resamples(n_resamples)
    if not runs:
        raise OptionError("compare needs at least one run.")
    if ties not in TIE_PRECISIONS:
        raise OptionError(f"ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}.")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise OptionError(f"depth (trec_eval -M) must be a whole number >= 1, got {depth!r}.")
    asked = [metrics] if isinstance(metrics, str) else metrics
    specs = resolve_metrics(asked)
    missing = trec_eval_names_missing(asked)
    level = check_relevance_level(relevance_level)
    judgments = _wrap_value_error(_as_qrels, qrels)
    scored = []
    for name, run in runs.items():
        rankings = _wrap_value_error(_rankings, run, ties)
        if depth is not None:
            rankings = {query_id: ranking[:depth] for query_id, ranking in rankings.items()}
        scores: RunScores = _wrap_value_error(score_rankings, judgments, rankings, specs, complete=complete,
                                              where=f"the deepest ranking of {name}", relevance_level=level,
                                              judged_only=judged_only)
        if not scores.query_ids:
            raise DatasetError(f"Run {name!r} shares no query with the qrels: nothing to score "
                               "(trec_eval: 'No queries with both results and relevance info').")
        warnings = list(scores.warnings)
        if missing:
            warnings.append(f"not computed (no recall-kit measure): {', '.join(missing)}")
        scored.append(ScoredRun(str(name), str(name), scores.query_ids, scores.values, scores.overall, warnings,
                                str(name)))
    return scored_runs(scored, None, complete=complete, ties=ties, relevance_level=level, judged_only=judged_only,
                       depth=depth, primary=primary, test=test, n_resamples=n_resamples, seed=seed,
                       runid_asked=_asks_runid(metrics), labels=display_names(asked))


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise RecallKitError(f"--resamples must be at least 1, got {n_resamples}.")


def _wrap_value_error(function: Any, *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, its ValueError (a malformed qrels or run) as a one-line DatasetError."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        raise DatasetError(f"{str(error)[:1].upper()}{str(error)[1:]}.") from None


def _rankings(run: Mapping[Any, Any], ties: str) -> dict[str, list[str]]:
    """Each query's ranked ids from ``{doc: score}``, ``[(doc, score) | Hit, ...]`` (both put in
    trec_eval's order) or ``[doc, ...]`` (ranked already)."""
    from recall_kit.measure.score.evaluation import _as_rankings
    from recall_kit.types import sort_hits

    scored: dict[Any, Any] = {}
    for query_id, answer in run.items():
        if isinstance(answer, Iterable) and not isinstance(answer, (Mapping, str, bytes)):
            answer = list(answer)
            if answer and all(isinstance(item, (Hit, tuple, list)) for item in answer):
                hits = [item if isinstance(item, Hit) else _hit(query_id, item) for item in answer]
                if any(math.isnan(hit.score) for hit in hits):
                    raise ValueError(f"run of query {query_id!r}: a score is NaN")
                scored[query_id] = [hit.id for hit in sort_hits(hits, ties)]  # a document twice is refused
                continue
        scored[query_id] = answer
    return _as_rankings(scored, ties)


def _hit(query_id: Any, item: Sequence[Any]) -> Hit:
    from recall_kit.measure.score.evaluation import _score_value

    if len(item) != 2:
        raise ValueError(f"run of query {query_id!r}: expected (doc_id, score) pairs, got {tuple(item)!r}")
    return Hit(str(item[0]), _score_value(query_id, item[0], item[1]))


def run_tag(path: Path) -> str | None:
    """A TREC run file's tag: the sixth field of its last line, the one trec_eval keeps as runid."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - 4096))
        lines = [line for line in handle.read().splitlines() if line.strip()]
    fields = lines[-1].split() if lines else []
    return fields[5].decode("utf-8", "replace") if len(fields) >= 6 else None


def _asks_runid(metrics: Sequence[str] | str | None) -> bool:
    from recall_kit.measure.score.metric_names import TREC_EVAL_SETS

    names = [metrics] if isinstance(metrics, str) else metrics or ()
    return any("runid" in TREC_EVAL_SETS.get(name.strip(), ()) for name in names if isinstance(name, str))


def run_labels(paths: Sequence[Path]) -> list[str]:
    """A label per run file: its name, or its path where two runs share a name."""
    names = [Path(path).name for path in paths]
    return [name if names.count(name) == 1 else str(path) for name, path in zip(names, paths, strict=True)]


def scored_runs(
    runs: Sequence[ScoredRun],
    qrels: str | None,
    *,
    complete: bool = False,
    ties: str = "float32",
    relevance_level: int = 1,
    judged_only: bool = False,
    depth: int | None = None,
    primary: Sequence[str] | None = None,
    test: str = "randomisation",
    n_resamples: int = 10_000,
    seed: int = 0,
    runid_asked: bool = False,
    labels: Mapping[str, str] | None = None,
) -> ScoredRuns:
    """Scored runs with, when there are several, each compared with the first on their shared queries."""
    names = list(runs[0].values)
    notes = [f"{run.label}: {warning}" if len(runs) > 1 else warning for run in runs for warning in run.warnings]
    settings: dict[str, Any] = {"complete": complete, "ties": ties, "relevance_level": relevance_level,
                                "judged_only": judged_only, "depth": depth, "runid_asked": runid_asked,
                                "labels": dict(labels or {})}
    if len(runs) == 1:
        return ScoredRuns(list(runs), names, qrels, warnings=notes, **settings)
    shared = set(runs[0].query_ids).intersection(*(run.query_ids for run in runs[1:]))
    query_ids = [qid for qid in runs[0].query_ids if qid in shared]
    if not query_ids:
        raise ResultFileError("The runs share no scored query: nothing to compare.")
    if any(run.n_queries != len(query_ids) for run in runs):
        notes.insert(0, (
            f"The runs score different query sets: the comparison uses the {len(query_ids)} queries "
            "all of them answer (--complete scores every qrels query in every run)."
        ))
    rows_of = [[{qid: i for i, qid in enumerate(run.query_ids)}[qid] for qid in query_ids] for run in runs]
    matrices = {name: [run.values[name][rows] for run, rows in zip(runs, rows_of, strict=True)] for name in names}
    primaries = [canonical_metric_name(name) for name in primary or []] or None
    from recall_kit.decide.compare import compare_values

    comparison = compare_values([run.label for run in runs], query_ids, None, matrices, primary=primaries,
                                n_resamples=n_resamples, seed=seed, test=test)
    return ScoredRuns(list(runs), names, qrels, comparison=comparison,
                      warnings=list(comparison.warnings) + notes, **settings)
