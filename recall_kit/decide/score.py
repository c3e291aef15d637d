"""`recall-kit score` and `recall_kit.compare`: runs scored against qrels as trec_eval scores them
and, with several runs, each compared with the first as `compare` compares result files.

Both return a `ScoredRuns`: the typed outcome (per-run means and per-query values, the comparison,
the scoring settings); its `report()` is what the command prints, its `to_dict()` what
``score --json`` writes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from recall_kit.errors import DatasetError, OptionError, ResultFileError
from recall_kit.measure.score.evaluation import RunScores, score_run_files
from recall_kit.measure.score.metric_names import canonical_metric_name, display_names
from recall_kit.reporting.formats import FOUR_PLACES, StreamedTable, four_places, numeric_cells, plain_cells
from recall_kit.types import Hit, Report, ReportTable

if TYPE_CHECKING:  # the comparison's modules are imported only when several runs are compared
    from recall_kit.decide.compare import Comparison


@dataclass(frozen=True)
class ScoreOptions:
    """How `score_files` and `compare` score runs and compare them, declared once: trec_eval's
    ``-c`` (`complete`), ``--ties`` (float32 or float64), ``-l`` (`relevance_level`), ``-J``
    (`judged_only`) and ``-M`` (`depth`), and, with several runs, the comparison's decision metrics
    (`primary`; default: the first metric), its p-value test (a key of `stats.PAIRED_TESTS`),
    bootstrap and randomisation resamples (`n_resamples`) and `seed`. Both functions take these
    as keywords, or as one `options=`."""

    complete: bool = False
    ties: str = "float32"
    relevance_level: int = 1
    judged_only: bool = False
    depth: int | None = None
    primary: Sequence[str] | None = None
    test: str = "randomisation"
    n_resamples: int = 10_000
    seed: int = 0

    @classmethod
    def of(cls, options: ScoreOptions | None, keywords: Mapping[str, Any]) -> ScoreOptions:
        """`options` (default: the defaults) with the `keywords` given beside it; an unknown one is refused."""
        unknown = sorted(set(keywords) - set(cls.__dataclass_fields__))
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
                            f"known: {', '.join(cls.__dataclass_fields__)}")
        return replace(options or cls(), **keywords)


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

    def query_chunks(self, size: int = 2000) -> Iterator[dict[str, dict[str, float]]]:
        """`queries()` a few thousand queries at a time, in order: what ``score --json`` streams."""
        for first in range(0, self.n_queries, size):
            part = ScoredRun(self.label, self.source, self.query_ids[first:first + size],
                             {name: values[first:first + size] for name, values in self.values.items()}, {})
            yield part.queries()


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

    def to_dict(self, streamed: bool = False) -> dict[str, Any]:
        """What ``score --json`` writes. `streamed`: each run's "queries" is a `JsonChunks` that
        `recall_kit.fileio.write_large_json_atomic` writes a few thousand queries at a time."""
        from recall_kit.fileio import JsonChunks

        def queries(run: ScoredRun) -> Any:
            return JsonChunks(run.query_chunks) if streamed else run.queries()

        settings: dict[str, Any] = {"qrels": self.qrels, "complete": self.complete, "ties": self.ties}
        data: dict[str, Any]
        if self.comparison is None:
            (run,) = self.runs
            data = {**settings, "run": run.source, "overall": run.overall_document(), "queries": queries(run),
                    "warnings": list(self.warnings)}
        else:
            data = {**settings, "runs": [{"run": run.source, "label": run.label, "overall": run.overall_document(),
                                          "queries": queries(run)} for run in self.runs],
                    "comparison": self.comparison.to_dict(), "warnings": list(self.warnings)}
        data.update(relevance_level=self.relevance_level, judged_only=self.judged_only, depth=self.depth)
        return data

    def trec_eval_text(self, per_query: bool = False) -> str:
        """trec_eval's own output lines for each run in turn (`score --report trec_eval`): each
        measure under the name trec_eval prints, in trec_eval's order (its measures.c table,
        whatever order they were asked in; a measure trec_eval lacks keeps recall-kit's name, last)."""
        return "".join(self.trec_eval_chunks(per_query))

    def trec_eval_chunks(self, per_query: bool = False) -> Iterator[str]:
        """`trec_eval_text` a few thousand queries' lines at a time."""
        from recall_kit.measure.score.metric_names import TREC_EVAL_PRINT_ORDER, resolve_metrics, trec_eval_name
        from recall_kit.reporting.trec_eval import TrecEvalMeasure, TrecEvalRun, trec_eval_chunks

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
        return trec_eval_chunks(runs, measures, per_query)

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
            return _shown_columns(run.values, names, whole)

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
            title = f"{Path(run.source).name} against {against}"
            # Each query's values drawn a chunk at a time, never held as rows, where every cell is plain.
            streamed = per_query and run.n_queries and plain_cells(run.query_ids) and plain_cells(heads)
            tables: list[ReportTable] = [
                _wide_table(run, title, names, heads, whole, value_rows) if streamed and wide
                else ReportTable(title=title, headers=["query", "n", *heads], rows=value_rows(run))]
            if per_query and not wide:
                tables.append(_long_table(run, names, heads, whole, long_rows) if streamed else
                              ReportTable(title="per query", headers=["query", "measure", "value"], rows=long_rows(run)))
            return _ScoreReport(title="recall-kit score", tables=tables, notes=notes, data_of=self.to_dict,
                                trec_eval_of=lambda: self.trec_eval_chunks(per_query))
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
                            trec_eval_of=lambda: self.trec_eval_chunks(per_query))


def _shown_columns(values: Mapping[str, np.ndarray], names: Sequence[str], whole: Collection[str]) -> list[list[str]]:
    """Each metric's values as the score table shows them (counts whole, the rest four places),
    one column at a time: the loop over values in C."""
    return [list(map(str, np.asarray(values[name]).astype(np.int64).tolist())) if name in whole
            else list(map(FOUR_PLACES, np.asarray(values[name], dtype=np.float64).tolist()))
            for name in names]


def _widest(values: np.ndarray, whole: bool) -> int:
    """The length of the longest of `values` as `_shown_columns` shows them, from the few values
    that can be it: a shown number's length grows with its magnitude on each side of zero, so
    the largest, the smallest and the most negative of those with a sign bit (-0.0 shows as
    "-0.0000") decide, with NaN and the infinities."""
    array = np.asarray(values)
    if not len(array):
        return 0
    if whole:
        counts = array.astype(np.int64)
        return max(len(str(int(counts.max()))), len(str(int(counts.min()))))
    array = array.astype(np.float64)
    finite = array[np.isfinite(array)]
    extremes = [float(finite.max()), float(finite.min())] if len(finite) else []
    signed = finite[np.signbit(finite)]
    extremes += [float(signed.min())] if len(signed) else []
    extremes += [value for value, found in ((math.nan, np.isnan), (math.inf, np.isposinf), (-math.inf, np.isneginf))
                 if found(array).any()]
    return max(len(FOUR_PLACES(value)) for value in extremes)


def _chunks(count: int, size: int = 2000) -> Iterator[slice]:
    """Slices of `size` rows covering `count` rows: the queries a streamed table draws at a time."""
    return (slice(first, first + size) for first in range(0, count, size))


def _wide_table(run: ScoredRun, title: str, names: Sequence[str], heads: Sequence[str], whole: Collection[str],
                rows_of: Callable[[ScoredRun], list[list[Any]]]) -> StreamedTable:
    """The run's table, its "all" row then a row of measures per query, drawn a chunk at a time."""
    summary = [str(int(run.overall[name])) if name in whole else four_places(run.overall[name]) for name in names]
    widths = [max([3, *map(len, run.query_ids)]), max(1, len(str(run.n_queries))),
              *(max(len(cell), _widest(run.values[name], name in whole)) for cell, name in zip(summary, names, strict=True))]

    def column_chunks() -> Iterator[list[list[str]]]:
        yield [["all"], [str(run.n_queries)], *([cell] for cell in summary)]
        for part in _chunks(run.n_queries):
            query_ids = run.query_ids[part]
            values = {name: run.values[name][part] for name in names}
            yield [query_ids, ["1"] * len(query_ids), *_shown_columns(values, names, whole)]

    return StreamedTable(title, ["query", "n", *heads], widths=widths, right=[False] + [True] * (len(names) + 1),
                         column_chunks=column_chunks, rows_of=lambda: rows_of(run))


def _long_table(run: ScoredRun, names: Sequence[str], heads: Sequence[str], whole: Collection[str],
                rows_of: Callable[[ScoredRun], list[list[Any]]]) -> StreamedTable:
    """The "per query" table, a row per query and measure, drawn a chunk of queries at a time."""
    widths = [max(map(len, run.query_ids), default=0), max(map(len, heads), default=0),
              max((_widest(run.values[name], name in whole) for name in names), default=0)]

    def column_chunks() -> Iterator[list[list[str]]]:
        for part in _chunks(run.n_queries):
            query_ids = run.query_ids[part]
            shown = _shown_columns({name: run.values[name][part] for name in names}, names, whole)
            yield [list(itertools.chain.from_iterable(map(itertools.repeat, query_ids, itertools.repeat(len(names))))),
                   list(heads) * len(query_ids), list(itertools.chain.from_iterable(zip(*shown)))]

    return StreamedTable("per query", ["query", "measure", "value"], widths=widths,
                         right=[numeric_cells(run.query_ids), numeric_cells(heads), True],
                         column_chunks=column_chunks, rows_of=lambda: rows_of(run))


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
                 trec_eval_of: Callable[[], Iterator[str]] | None = None, **fields: Any) -> None:
        super().__init__(**fields)  # `data`, when given (dataclasses.replace gives it), is set here
        if data_of is not None:
            self._data_of: Callable[[], dict[str, Any]] | None = data_of
        #: trec_eval's own output lines, made (in chunks) when the trec_eval reporter asks for them.
        self.trec_eval_chunks = trec_eval_of

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
    options: ScoreOptions | None = None,
    **keywords: Any,
) -> ScoredRuns:
    """Score TREC run files against a TREC qrels file and compare them (`recall-kit score`).

    Scoring is `recall_kit.measure.score.evaluation.score_run_files` (trec_eval's order, ``-c``, ``-l``,
    ``-J``, ``-M`` as `depth`, float32 or float64 ties); with several runs each is compared with the first, Holm's
    correction over the `primary` metrics (trec_eval and ir_measures names accepted; default: the
    first metric), the p-values from `test` (a key of `recall_kit.decide.stats.PAIRED_TESTS`): the
    settings are `ScoreOptions`, given as `options` or as keywords (``complete=True``).
    ``.report()`` is what the command prints, ``.to_dict()`` what ``score --json`` writes.
    """
    settings = ScoreOptions.of(options, keywords)
    _check_resamples(settings.n_resamples)
    scores = score_run_files(qrels_path, run_paths, metrics, complete=settings.complete, ties=settings.ties,
                             relevance_level=settings.relevance_level, judged_only=settings.judged_only,
                             depth=settings.depth)
    labels = run_labels(run_paths)
    runs = [ScoredRun(label, str(path), run.query_ids, run.values, run.overall, run.warnings, run_tag(path))
            for label, path, run in zip(labels, run_paths, scores, strict=True)]
    return scored_runs(runs, str(qrels_path), settings, runid_asked=_asks_runid(metrics),
                       labels=display_names(list(metrics or ())))


def compare(
    qrels: Mapping[Any, Any],
    runs: Mapping[str, Mapping[Any, Any]],
    metrics: Sequence[str] | str | None = None,
    options: ScoreOptions | None = None,
    **keywords: Any,
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
    correction over the `primary` metrics (default: the first). The settings are `ScoreOptions`,
    given as `options` or as keywords, as `score_files` takes them. Values equal ``score_files`` on
    the same runs written as TREC files.
    """
    from recall_kit.measure.score.evaluation import score_rankings
    from recall_kit.measure.score.in_memory import as_qrels
    from recall_kit.measure.score.join import check_relevance_level
    from recall_kit.measure.score.metric_names import resolve_metrics, trec_eval_names_missing
    from recall_kit.types import TIE_PRECISIONS

    settings = ScoreOptions.of(options, keywords)
    ties, depth = settings.ties, settings.depth
    _check_resamples(settings.n_resamples)
    if not runs:
        raise OptionError("compare needs at least one run.")
    if ties not in TIE_PRECISIONS:
        raise OptionError(f"ties must be one of {', '.join(TIE_PRECISIONS)}, got {ties!r}.")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise OptionError(f"depth (trec_eval -M) must be a whole number >= 1, got {depth!r}.")
    asked = [metrics] if isinstance(metrics, str) else metrics
    specs = resolve_metrics(asked)
    missing = trec_eval_names_missing(asked)
    level = check_relevance_level(settings.relevance_level)
    judgments = _wrap_value_error(as_qrels, qrels)
    scored = []
    for name, run in runs.items():
        rankings = _wrap_value_error(_rankings, run, ties)
        if depth is not None:
            rankings = {query_id: ranking[:depth] for query_id, ranking in rankings.items()}
        scores: RunScores = _wrap_value_error(score_rankings, judgments, rankings, specs, complete=settings.complete,
                                              where=f"the deepest ranking of {name}", relevance_level=level,
                                              judged_only=settings.judged_only)
        if not scores.query_ids:
            raise DatasetError(f"Run {name!r} shares no query with the qrels: nothing to score "
                               "(trec_eval: 'No queries with both results and relevance info').")
        warnings = list(scores.warnings)
        if missing:
            warnings.append(f"not computed (no recall-kit measure): {', '.join(missing)}")
        scored.append(ScoredRun(str(name), str(name), scores.query_ids, scores.values, scores.overall, warnings,
                                str(name)))
    return scored_runs(scored, None, replace(settings, relevance_level=level), runid_asked=_asks_runid(metrics),
                       labels=display_names(asked))


def _check_resamples(n_resamples: int) -> None:
    from recall_kit.decide.stats import check_resamples

    check_resamples(n_resamples)


def _wrap_value_error(function: Any, *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, its ValueError (a malformed qrels or run) as a one-line DatasetError."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        raise DatasetError(f"{str(error)[:1].upper()}{str(error)[1:]}.") from None


def _rankings(run: Mapping[Any, Any], ties: str) -> dict[str, list[str]]:
    """Each query's ranked ids from ``{doc: score}``, ``[(doc, score) | Hit, ...]`` (both put in
    trec_eval's order) or ``[doc, ...]`` (ranked already)."""
    from recall_kit.measure.score.in_memory import as_rankings
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
    return as_rankings(scored, ties)


def _hit(query_id: Any, item: Sequence[Any]) -> Hit:
    from recall_kit.measure.score.in_memory import score_value

    if len(item) != 2:
        raise ValueError(f"run of query {query_id!r}: expected (doc_id, score) pairs, got {tuple(item)!r}")
    return Hit(str(item[0]), score_value(query_id, item[0], item[1]))


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
    options: ScoreOptions,
    *,
    runid_asked: bool = False,
    labels: Mapping[str, str] | None = None,
) -> ScoredRuns:
    """Scored runs with, when there are several, each compared with the first on their shared queries."""
    names = list(runs[0].values)
    notes = [f"{run.label}: {warning}" if len(runs) > 1 else warning for run in runs for warning in run.warnings]
    settings: dict[str, Any] = {"complete": options.complete, "ties": options.ties,
                                "relevance_level": options.relevance_level, "judged_only": options.judged_only,
                                "depth": options.depth, "runid_asked": runid_asked, "labels": dict(labels or {})}
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
    primaries = [canonical_metric_name(name) for name in options.primary or []] or None
    from recall_kit.decide.compare import compare_values

    comparison = compare_values([run.label for run in runs], query_ids, None, matrices, primary=primaries,
                                n_resamples=options.n_resamples, seed=options.seed, test=options.test)
    return ScoredRuns(list(runs), names, qrels, comparison=comparison,
                      warnings=list(comparison.warnings) + notes, **settings)
