"""What the holes in the labels can do to a paired comparison, and which labels to give first.

The *holes* of a comparison are the ids in either system's top k that no label judges (scored as
not relevant). For each query every labelling of them (each hole relevant or not; for a metric
that reads grades, each hole graded 0-3: see `labellings`) is scored with the registered metric
itself, so the bounds are exact for any metric with a rank cutoff (a metric that reads grades
outside the DCG family: up to `ALL_GRADES_HOLES` holes, refused past that). Queries of one shape
(`_shape`) are scored once.

- ``low``/``high``: the lowest and highest paired delta (candidate - baseline) any labelling of the
  holes gives; each query is labelled independently, so both ends are labellings that could be true;
- ``all_relevant``: the delta with every hole relevant (grade 1); ``delta`` itself is the one with none;
- the paired test's verdict at each end (``better``, ``worse``, ``no difference``); a comparison
  whose verdict is the same at both ends as now *cannot flip*;
- the judged-only (condensed, trec_eval ``-J``) score of each system.

A hole's *weight* for a comparison is how far its label alone can move the comparison's mean delta
at either end (|delta with it relevant - delta with it not| / n): the weight of Carterette, Allan &
Sitaraman, "Minimal test collections for retrieval evaluation" (SIGIR 2006). For a measure such as
precision or hit a hole in both tops weighs nothing; for recall or MRR it may (it moves R, or the
first relevant rank of both). `Holes` keeps the bounds of a set of comparisons current as labels
arrive and orders the holes by their summed weight over the comparisons that can still flip.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from recall_kit.errors import RecallKitError

if TYPE_CHECKING:
    from recall_kit.measure.score.metric_names import MetricSpec

#: At most this many holes in one query's two tops: every labelling (2**n) is scored.
MAX_HOLES = 12
#: The grades a person gives (`recall-kit label`'s 0-3): a metric that reads grades is bounded over them.
GRADES = (0, 1, 2, 3)
#: A metric that reads grades is bounded over every grade of at most this many holes (4**5 labellings) ...
ALL_GRADES_HOLES = 5
#: ... and beyond, exactly, when it is of the DCG family: a sum of gain(grade) x rank discount
#: (log2), over a normaliser fixed by how many documents have each grade.
ARRANGED = frozenset({"ndcg", "ndcg_exp", "dcg"})
ALPHA = 0.05
BETTER, WORSE, NO_DIFFERENCE = "better", "worse", "no difference"


class BoundsError(RecallKitError, ValueError):
    """Bounds cannot be computed as asked (a metric without a rank cutoff, too many holes)."""


def verdict_of(delta: float, p_value: float, alpha: float = ALPHA) -> str:
    """``better``/``worse`` when the (adjusted) p is below alpha, by the delta's sign, else ``no difference``."""
    if p_value < alpha and delta > 0:
        return BETTER
    if p_value < alpha and delta < 0:
        return WORSE
    return NO_DIFFERENCE


def metric_spec(name: str) -> MetricSpec:
    """The registered metric `name` (``recall@5``), refused unless it reads a top k."""
    from recall_kit.measure.score.metric_names import resolve_metrics

    (spec,) = resolve_metrics([name])
    if spec.rank_cutoff is None:
        raise BoundsError(f"Bounds need a metric with a rank cutoff (its top k holds the holes): {name!r} has none; "
                          f"use e.g. {spec.metric.name}@5.")
    return spec


def holes_of(judgments: Mapping[str, int], *rankings: Sequence[str]) -> tuple[str, ...]:
    """The ids of `rankings` (already cut at k) with no judgment (absent, or a negative grade), in
    order of first appearance."""
    seen: dict[str, None] = {}
    for ranking in rankings:
        for doc in ranking:
            if judgments.get(doc, -1) < 0:
                seen.setdefault(doc, None)
    return tuple(seen)


def labelling_values(
    specs: Sequence[MetricSpec],
    rankings: Sequence[Sequence[str]],
    judgments: Mapping[str, int],
    holes: Sequence[str],
    relevance_level: int = 1,
) -> dict[str, np.ndarray]:
    """Each metric of `specs` for each ranking under every labelling `labellings` gives of `holes`.

    Returns metric name -> array (len(rankings), number of labellings), scored by the registered
    metric through the same join as `eval`; the first ``2**len(holes)`` columns are the binary
    labellings in code order (column ``i`` makes hole ``j`` relevant, grade `relevance_level`, when
    bit ``j`` of ``i`` is set, else grade 0).
    """
    return _score(specs, rankings, judgments, holes, labellings(specs, rankings, holes, relevance_level),
                  relevance_level)


def labellings(specs: Sequence[MetricSpec], rankings: Sequence[Sequence[str]], holes: Sequence[str],
               relevance_level: int = 1) -> np.ndarray:
    """The labellings of `holes` that hold the extremes of every metric of `specs`: (m, len(holes)) grades.

    Every binary labelling (each hole 0 or `relevance_level`: 2**n, exact for a metric that reads
    relevance alone), then, when a metric reads grades (`reads_grades`): every labelling with
    grades 0-3 for at most `ALL_GRADES_HOLES` holes, else, for the DCG family (`ARRANGED`), for
    each count of holes at each grade the two arrangements that put the highest grades where the
    candidate's discount most exceeds the baseline's, and the reverse (exact: with the grades'
    counts fixed the ideal DCG is fixed and the delta's numerator is a sum of gain x discount
    difference, largest and smallest by the rearrangement inequality)."""
    n = len(holes)
    if n > MAX_HOLES:
        raise BoundsError(f"{', '.join(spec.name for spec in specs)}: {n} unjudged ids in one query's two tops: bounds "
                          f"enumerate every labelling and take at most {MAX_HOLES}; use a smaller k (k <= 6 always fits).")
    codes = np.arange(1 << n)
    binary = ((codes[:, None] >> np.arange(n)) & 1).astype(np.int64) * relevance_level
    graded = [spec for spec in specs if reads_grades(spec)]
    if not graded or n == 0:
        return binary
    if n <= ALL_GRADES_HOLES:
        every = np.array(list(product(GRADES, repeat=n)), dtype=np.int64).reshape(-1, n)
        return np.concatenate([binary, every])
    other = [spec.name for spec in graded if spec.metric.name not in ARRANGED]
    if other:
        raise BoundsError(f"{other[0]} reads grades 0-3: its bounds enumerate every grade of at most "
                          f"{ALL_GRADES_HOLES} unjudged ids in one query's two tops, and a query has {n}; use a smaller k.")
    return np.concatenate([binary, _arrangements(rankings, holes)])


def _arrangements(rankings: Sequence[Sequence[str]], holes: Sequence[str]) -> np.ndarray:
    """For each count of holes at each grade, the grades sorted by discount advantage, both ways."""
    def discount(ranking: Sequence[str], doc: str) -> float:
        return 1.0 / np.log2(list(ranking).index(doc) + 2) if doc in ranking else 0.0

    baseline, candidate = rankings[0], rankings[-1]
    advantage = np.array([discount(candidate, doc) - discount(baseline, doc) for doc in holes])
    order = np.argsort(-advantage, kind="stable")
    n, top = len(holes), max(GRADES)
    rows = []
    for counts in _compositions(n, top + 1):  # counts[g]: how many holes get grade g
        grades = np.repeat(np.arange(top, -1, -1), counts[::-1])  # highest first
        for ranked in (order, order[::-1]):
            row = np.empty(n, dtype=np.int64)
            row[ranked] = grades
            rows.append(row)
    return np.array(rows, dtype=np.int64)


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write `total` as `parts` counts >= 0 (in order)."""
    if parts == 1:
        return [(total,)]
    return [(first, *rest) for first in range(total + 1) for rest in _compositions(total - first, parts - 1)]


@lru_cache(maxsize=256)
def _reads_grades(metric: object, cutoff: int | None) -> bool:
    from recall_kit.measure.score.join import judge_rankings
    from recall_kit.measure.score.metric_names import MetricSpec

    spec = MetricSpec(name="probe", metric=metric, cutoff=cutoff)  # type: ignore[arg-type]
    ranking = ["a", "b", "c"]
    variants = [{"a": 1, "b": 1, "d": 1}, {"a": 1, "b": 3, "d": 1}, {"a": 3, "b": 1, "d": 2}, {"a": 2, "b": 2, "d": 3}]
    qrels = {str(i): qrel for i, qrel in enumerate(variants)}
    data = judge_rankings(list(qrels), [ranking] * len(qrels), qrels, complete=True)
    values = spec.compute(data)
    return bool(np.ptp(values) > 1e-12)


def reads_grades(spec: MetricSpec) -> bool:
    """Whether `spec`'s value changes with a relevant document's grade (nDCG does; recall does not):
    probed once on a small ranking whose documents are relevant in each variant, at other grades."""
    return _reads_grades(spec.metric, spec.cutoff)


def _score(specs: Sequence[MetricSpec], rankings: Sequence[Sequence[str]], judgments: Mapping[str, int],
           holes: Sequence[str], grades: np.ndarray, relevance_level: int) -> dict[str, np.ndarray]:
    from recall_kit.measure.score.join import judge_rankings

    count = len(grades)
    base = {doc: grade for doc, grade in judgments.items() if grade >= 0 and doc not in holes}
    qrels: dict[str, dict[str, int]] = {}
    for code in range(count):
        labelled = dict(base)
        labelled.update(zip(holes, map(int, grades[code]), strict=True))
        for r in range(len(rankings)):
            qrels[f"{r}:{code}"] = labelled
    ids = [f"{r}:{code}" for r in range(len(rankings)) for code in range(count)]
    lists = [list(rankings[r]) for r in range(len(rankings)) for _ in range(count)]
    data = judge_rankings(ids, lists, qrels, complete=True, relevance_level=relevance_level)
    return {spec.name: spec.compute(data).reshape(len(rankings), count) for spec in specs}


def _shape(judgments: Mapping[str, int], tops: Sequence[Sequence[str]], holes: Sequence[str]) -> tuple[object, ...]:
    """What a query's labelling values depend on, ids left out: each top as hole numbers and
    (judged number, grade), and the grades judged outside the tops. Two queries of one shape have
    the same values under the same labellings, so one is scored for both."""
    hole_number = {doc: i for i, doc in enumerate(holes)}
    judged_number: dict[str, int] = {}
    shown = []
    for top in tops:
        row: list[tuple[object, ...]] = []
        for doc in top:
            if doc in hole_number:
                row.append(("h", hole_number[doc]))
            else:
                row.append(("j", judged_number.setdefault(doc, len(judged_number)), judgments[doc]))
        shown.append(tuple(row))
    outside = tuple(sorted(grade for doc, grade in judgments.items() if grade >= 0 and doc not in judged_number))
    return (*shown, outside)


@dataclass(frozen=True)
class QueryHoles:
    """One query of one comparison: its holes and both systems' value under each labelling of them
    (`labellings`: the binary ones first, in code order, then any graded ones)."""

    query_id: str
    holes: tuple[str, ...]
    #: (number of labellings,) the baseline's and the candidate's metric value under each labelling.
    baseline: np.ndarray
    candidate: np.ndarray
    #: What `delta_with` scores a labelling with: the metric, the two tops (baseline's, candidate's) and
    #: the query's judgments outside the holes (empty: a table built by hand, binary labellings only).
    metric: str = field(default="", compare=False)
    tops: tuple[tuple[str, ...], ...] = field(default=(), compare=False)
    judgments: Mapping[str, int] = field(default_factory=dict, compare=False)

    def delta_with(self, grades: Mapping[str, int], relevance_level: int = 1) -> float:
        """The delta with each hole graded as `grades` says (absent: 0): the binary labelling's
        column for a metric that reads relevance alone, else the metric scored with the grades
        themselves (nDCG reads a 3 as more than a 1)."""
        column = sum(1 << j for j, doc in enumerate(self.holes) if grades.get(doc, 0) >= relevance_level)
        if not self.metric or not self.tops or not reads_grades(metric_spec(self.metric)):
            return float(self.delta[column])
        row = np.array([[max(int(grades.get(doc, 0)), 0) for doc in self.holes]], dtype=np.int64)
        values = _score([metric_spec(self.metric)], self.tops, self.judgments, self.holes, row,
                        relevance_level)[self.metric]
        return float(values[1][0] - values[0][0])

    @cached_property
    def delta(self) -> np.ndarray:
        return self.candidate - self.baseline

    @cached_property
    def low(self) -> int:
        """The labelling with the lowest delta (the first such, so none-relevant wins a tie)."""
        return int(np.argmin(self.delta))

    @cached_property
    def high(self) -> int:
        return int(np.argmax(self.delta))

    @property
    def all_relevant(self) -> int:
        """The binary labelling with every hole relevant."""
        return (1 << len(self.holes)) - 1

    def weights(self) -> dict[str, float]:
        """Hole -> how far its label alone (relevant or not) moves this query's delta at either end
        of the binary labellings."""
        return self._weights

    @cached_property
    def _weights(self) -> dict[str, float]:
        delta = self.delta[: 1 << len(self.holes)]
        ends = (int(np.argmin(delta)), int(np.argmax(delta)))
        out = {}
        for j, doc in enumerate(self.holes):
            out[doc] = max(abs(float(delta[end] - delta[end ^ (1 << j)])) for end in ends)
        return out


@dataclass(frozen=True)
class Contrast:
    """One comparison to bound: `candidate` against `baseline` on `metric` over `query_ids` (a scope).

    Contrasts that share a `family` are Holm-corrected together (None: no correction). A contrast
    that is not `watched` counts only in its family's correction: it is never ordered for or settled."""

    baseline: str
    candidate: str
    metric: str
    scope: str
    query_ids: tuple[str, ...]
    family: str | None = None
    watched: bool = True


@dataclass(frozen=True)
class PairedBounds:
    """What the holes can do to one contrast's delta and verdict."""

    baseline: str
    candidate: str
    metric: str
    scope: str
    n: int
    #: The delta as scored (every hole not relevant), and its range over every labelling of the holes.
    delta: float
    low: float
    high: float
    #: The delta with every hole relevant.
    all_relevant: float
    #: The paired test's p (Holm-adjusted within the contrast's family) now and at each end.
    p_value: float
    p_low: float
    p_high: float
    #: Unjudged (query, id) pairs in either top k, and those whose label can move the delta.
    holes: int
    movers: int
    #: Judged-only (condensed, trec_eval -J) mean of each system; None until asked for.
    condensed_baseline: float | None = None
    condensed_candidate: float | None = None
    alpha: float = ALPHA

    @property
    def verdict(self) -> str:
        return verdict_of(self.delta, self.p_value, self.alpha)

    @property
    def verdict_low(self) -> str:
        return verdict_of(self.low, self.p_low, self.alpha)

    @property
    def verdict_high(self) -> str:
        return verdict_of(self.high, self.p_high, self.alpha)

    @property
    def can_flip(self) -> bool:
        """Whether some labelling of the holes gives another verdict at either end."""
        return self.verdict_low != self.verdict or self.verdict_high != self.verdict

    def to_dict(self) -> dict[str, object]:
        return {"baseline": self.baseline, "candidate": self.candidate, "metric": self.metric, "scope": self.scope,
                "n": self.n, "delta": self.delta, "low": self.low, "high": self.high,
                "all_relevant": self.all_relevant, "p_value": self.p_value, "p_low": self.p_low,
                "p_high": self.p_high, "verdict": self.verdict, "verdict_low": self.verdict_low,
                "verdict_high": self.verdict_high, "can_flip": self.can_flip, "holes": self.holes,
                "movers": self.movers, "condensed_baseline": self.condensed_baseline,
                "condensed_candidate": self.condensed_candidate}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> PairedBounds:
        names = {name for name in cls.__dataclass_fields__}
        return cls(**{key: value for key, value in data.items() if key in names})  # type: ignore[arg-type]


@dataclass
class _Ends:
    """One contrast's per-query values at its ends, kept current as labels arrive."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    tests: dict[str, float] = field(default_factory=dict)
    #: The queries whose tables changed since the values were taken (None: all of them).
    stale: set[str] | None = None
    #: query id -> its row in the contrast's arrays.
    rows: dict[str, int] = field(default_factory=dict)


class Holes:
    """The bounds of a set of contrasts, kept current as labels arrive, and the order to judge in.

    `rankings`: system -> query id -> ranking (best first); `qrels`: query id -> id -> grade (copied:
    `label` adds to the copy). Each contrast's queries must be ranked by both its systems. `shapes`:
    a cache of scored labellings to share with other Holes (benchmarks/bench_holes.py, over seeds).
    """

    def __init__(
        self,
        rankings: Mapping[str, Mapping[str, Sequence[str]]],
        qrels: Mapping[str, Mapping[str, int]],
        contrasts: Sequence[Contrast],
        *,
        test: str = "randomisation",
        n_resamples: int = 2000,
        seed: int = 0,
        alpha: float = ALPHA,
        relevance_level: int = 1,
        shapes: dict[tuple[object, ...], dict[str, np.ndarray]] | None = None,
    ) -> None:
        self.rankings = rankings
        self.qrels: dict[str, dict[str, int]] = {q: dict(j) for q, j in qrels.items()}
        self.contrasts = list(contrasts)
        self.test, self.n_resamples, self.seed, self.alpha = test, n_resamples, seed, alpha
        self.relevance_level = relevance_level
        self.specs = {c.metric: metric_spec(c.metric) for c in self.contrasts}
        for contrast in self.contrasts:
            for system in (contrast.baseline, contrast.candidate):
                if system not in rankings:
                    raise BoundsError(f"No rankings for system {system!r} (have {', '.join(rankings)}).")
                missing = [q for q in contrast.query_ids if q not in rankings[system]]
                if missing:
                    raise BoundsError(f"System {system!r} has no ranking for query {missing[0]!r}.")
        #: (baseline, candidate, query) -> metric -> QueryHoles
        self._tables: dict[tuple[str, str, str], dict[str, QueryHoles]] = {}
        #: (metric names, the shape of a query's two tops) -> the values of every labelling; `shapes`
        #: shares it between Holes of other judgments (a shape's values hold no id and no label).
        self._shapes: dict[tuple[object, ...], dict[str, np.ndarray]] = {} if shapes is None else shapes
        self._ends = [_Ends() for _ in self.contrasts]
        #: `order()`'s answer until the next label (`_refresh` forgets it): the label page asks for
        #: it several times a grade.
        self._order: list[tuple[str, str, float]] | None = None
        #: `_weights(index)`'s answers until the next label (the order and the bounds read them).
        self._weighed: dict[int, dict[tuple[str, str], float]] = {}
        pending = sorted({(c.baseline, c.candidate, q) for c in self.contrasts for q in c.query_ids})
        from recall_kit.progress import progress_bar

        with progress_bar(len(pending), f"bounds: every labelling of the unjudged top-k ids of {len(pending):,} "
                                        "(pair, query)") as advance:
            for baseline, candidate, query in pending:
                self._build(baseline, candidate, query)
                advance(1)
        self._refresh()

    # -- tables ------------------------------------------------------------------------------------

    def _pair_metrics(self, baseline: str, candidate: str) -> list[str]:
        return list(dict.fromkeys(c.metric for c in self.contrasts if (c.baseline, c.candidate) == (baseline, candidate)))

    def _build(self, baseline: str, candidate: str, query: str) -> None:
        """(Re)score every labelling of `query`'s holes for the pair, one call per cutoff; a query
        of the same shape as one scored before (`_shape`) reuses its values."""
        judgments = self.qrels.get(query, {})
        by_cutoff: dict[int, list[MetricSpec]] = {}
        for name in self._pair_metrics(baseline, candidate):
            spec = self.specs[name]
            by_cutoff.setdefault(int(spec.rank_cutoff or 0), []).append(spec)
        tables = {}
        for cutoff, specs in by_cutoff.items():
            tops = [list(self.rankings[baseline][query])[:cutoff], list(self.rankings[candidate][query])[:cutoff]]
            holes = holes_of(judgments, *tops)
            key = (tuple(spec.name for spec in specs), *_shape(judgments, tops, holes))
            values = self._shapes.get(key)
            if values is None:
                try:
                    values = labelling_values(specs, tops, judgments, holes, self.relevance_level)
                except BoundsError as error:
                    raise BoundsError(f"query {query!r}: {error}") from None
                self._shapes[key] = values
            judged = {doc: grade for doc, grade in judgments.items() if grade >= 0 and doc not in holes}
            for spec in specs:
                tables[spec.name] = QueryHoles(query, holes, values[spec.name][0], values[spec.name][1],
                                               metric=spec.name, tops=(tuple(tops[0]), tuple(tops[1])),
                                               judgments=judged)
        self._tables[(baseline, candidate, query)] = tables

    def table(self, contrast: Contrast, query: str) -> QueryHoles:
        return self._tables[(contrast.baseline, contrast.candidate, query)][contrast.metric]

    # -- labels ------------------------------------------------------------------------------------

    def label(self, query: str, doc: str, grade: int) -> None:
        """Take one label: the query's tables and the bounds of every contrast that holds it change."""
        self.label_many([(query, doc, grade)])

    def label_many(self, labels: Sequence[tuple[str, str, int]]) -> None:
        """Take several labels, then recompute once."""
        queries = set()
        for query, doc, grade in labels:
            self.qrels.setdefault(query, {})[str(doc)] = int(grade)
            queries.add(query)
        for baseline, candidate, other in list(self._tables):
            if other in queries:
                self._build(baseline, candidate, other)
        for contrast, ends in zip(self.contrasts, self._ends, strict=True):
            touched = queries.intersection(ends.rows) if ends.rows else queries.intersection(contrast.query_ids)
            if touched and ends.stale is not None:
                ends.stale |= touched
        self._refresh()

    # -- bounds ------------------------------------------------------------------------------------

    #: The arrays each contrast keeps, and how each query's entry is read off its table.
    _COLUMNS = {
        "base": lambda t: t.baseline[0], "cand": lambda t: t.candidate[0],
        "base_low": lambda t: t.baseline[t.low], "cand_low": lambda t: t.candidate[t.low],
        "base_high": lambda t: t.baseline[t.high], "cand_high": lambda t: t.candidate[t.high],
        "all": lambda t: t.delta[t.all_relevant],
    }

    def _refresh(self) -> None:
        """Bring each contrast's arrays up to date (only the rows of the queries that changed) and
        rerun the tests of each end whose values moved."""
        from recall_kit.decide.stats import paired_test_p

        self._order, self._weighed = None, {}
        for contrast, ends in zip(self.contrasts, self._ends, strict=True):
            if ends.stale is not None and not ends.stale:
                continue
            if ends.stale is None:
                tables = [self.table(contrast, q) for q in contrast.query_ids]
                new = {name: np.array([read(t) for t in tables]) for name, read in self._COLUMNS.items()}
                ends.rows = {q: i for i, q in enumerate(contrast.query_ids)}
            else:
                new = {name: values.copy() for name, values in ends.values.items()}
                for query in ends.stale:
                    table = self.table(contrast, query)
                    for name, read in self._COLUMNS.items():
                        new[name][ends.rows[query]] = read(table)
            for end in ("", "_low", "_high"):
                key = end or "_now"
                changed = any(not np.array_equal(new[name + end], ends.values.get(name + end, np.empty(0)))
                              for name in ("base", "cand"))
                if changed or key not in ends.tests:
                    ends.tests[key] = paired_test_p(self.test, new["base" + end], new["cand" + end],
                                                    self.n_resamples, self.seed)
            ends.values, ends.stale = new, set()

    def _adjusted(self, index: int, end: str) -> float:
        """Contrast `index`'s p at `end`, Holm-adjusted with the rest of its family as they are now."""
        from recall_kit.decide.stats import holm

        family = self.contrasts[index].family
        if family is None:
            return self._ends[index].tests[end]
        members = [i for i, c in enumerate(self.contrasts) if c.family == family]
        raw = [self._ends[i].tests[end if i == index else "_now"] for i in members]
        return holm(raw)[members.index(index)]

    def bound(self, index: int) -> PairedBounds:
        """The bounds of contrast `index` (no condensed scores: see `bounds`)."""
        contrast, ends = self.contrasts[index], self._ends[index]
        v = ends.values
        weights = self._weights(index)
        return PairedBounds(
            baseline=contrast.baseline, candidate=contrast.candidate, metric=contrast.metric, scope=contrast.scope,
            n=len(contrast.query_ids), delta=float((v["cand"] - v["base"]).mean()),
            low=float((v["cand_low"] - v["base_low"]).mean()), high=float((v["cand_high"] - v["base_high"]).mean()),
            all_relevant=float(v["all"].mean()), p_value=self._adjusted(index, "_now"),
            p_low=self._adjusted(index, "_low"), p_high=self._adjusted(index, "_high"),
            holes=sum(len(self.table(contrast, q).holes) for q in contrast.query_ids),
            movers=sum(1 for w in weights.values() if w > 0), alpha=self.alpha,
        )

    def bounds(self, condensed: bool = True) -> list[PairedBounds]:
        """Every contrast's bounds, with each system's judged-only mean when `condensed`."""
        out = []
        for index, contrast in enumerate(self.contrasts):
            bound = self.bound(index)
            if condensed:
                from dataclasses import replace

                bound = replace(bound, condensed_baseline=self._condensed(contrast.baseline, contrast),
                                condensed_candidate=self._condensed(contrast.candidate, contrast))
            out.append(bound)
        return out

    def _condensed(self, system: str, contrast: Contrast) -> float:
        """`system`'s judged-only mean on the contrast's metric and queries (trec_eval -J)."""
        from recall_kit.measure.score.join import judge_rankings

        queries = list(contrast.query_ids)
        data = judge_rankings(queries, [list(self.rankings[system][q]) for q in queries], self.qrels,
                              complete=True, relevance_level=self.relevance_level, judged_only=True)
        return float(self.specs[contrast.metric].compute(data).mean())

    def can_flip(self, index: int) -> bool:
        """Whether contrast `index`'s verdict differs at either end from now (no weights computed)."""
        v = self._ends[index].values
        now = verdict_of(float((v["cand"] - v["base"]).mean()), self._adjusted(index, "_now"), self.alpha)
        return any(verdict_of(float((v["cand" + end] - v["base" + end]).mean()), self._adjusted(index, end), self.alpha)
                   != now for end in ("_low", "_high"))

    @property
    def settled(self) -> bool:
        """True when no contrast's verdict can flip, whatever the holes hold."""
        return not any(self.can_flip(i) for i, c in enumerate(self.contrasts) if c.watched)

    # -- the order ---------------------------------------------------------------------------------

    def _weights(self, index: int) -> dict[tuple[str, str], float]:
        """Each hole's weight in contrast `index` (kept until the next label; callers only read it)."""
        if index not in self._weighed:
            contrast = self.contrasts[index]
            n = len(contrast.query_ids)
            out = {}
            for query in contrast.query_ids:
                for doc, weight in self.table(contrast, query).weights().items():
                    out[(query, doc)] = weight / n
            self._weighed[index] = out
        return self._weighed[index]

    def order(self) -> list[tuple[str, str, float]]:
        """(query, id, weight) of every hole that can move a contrast that can flip, heaviest first.

        A hole's weight is the sum of its weights over those contrasts; ties go by query, then id.
        Computed once between labels."""
        if self._order is None:
            total: dict[tuple[str, str], float] = {}
            for index, contrast in enumerate(self.contrasts):
                if not contrast.watched or not self.can_flip(index):
                    continue
                for pair, weight in self._weights(index).items():
                    if weight > 0:
                        total[pair] = total.get(pair, 0.0) + weight
            self._order = [(q, d, w) for (q, d), w in sorted(total.items(), key=lambda item: (-item[1], item[0]))]
        return list(self._order)

    def moved_by(self, query: str, doc: str) -> list[Contrast]:
        """The watched contrasts that can still flip and whose delta the label of `doc` for `query` can move."""
        return [contrast for index, contrast in enumerate(self.contrasts)
                if contrast.watched and query in contrast.query_ids and self.can_flip(index)
                and self.table(contrast, query).weights().get(doc, 0.0) > 0]

    def to_settle(self) -> int:
        """At most this many judgments settle every verdict (each hole that can move one that can flip)."""
        return len(self.order())


def boundable(metrics: Sequence[str]) -> list[str]:
    """The metrics bounds can be computed for: a rank cutoff, and not a diagnostic (judged@k)."""
    from recall_kit.decide.compare import is_diagnostic

    out = []
    for name in metrics:
        if is_diagnostic(name):
            continue
        try:
            metric_spec(name)
        except BoundsError:
            continue
        out.append(name)
    return out


def cutoff_problem(name: str) -> str | None:
    """Why the bounds of `name` may fail on some query (its k lets two tops hold more holes than
    bounds enumerate), or None: a metric without a rank cutoff (not bounded) or a k that always fits."""
    from recall_kit.decide.compare import is_diagnostic

    try:
        spec = metric_spec(name)
    except BoundsError:
        return None
    if is_diagnostic(name):
        return None
    every_grade = reads_grades(spec) and spec.metric.name not in ARRANGED
    limit = (ALL_GRADES_HOLES if every_grade else MAX_HOLES) // 2
    k = int(spec.rank_cutoff or 0)
    if k <= limit:
        return None
    what = f"every grade 0-3 of at most {ALL_GRADES_HOLES}" if every_grade else f"every labelling of at most {MAX_HOLES}"
    return (f"{name!r} reads a top {k}: the bounds of a verdict enumerate {what} unjudged ids in two systems' tops, "
            f"so its k is at most {limit} ({spec.metric.name}@{limit})")


def bounds_of_comparison(comparison: object, qrels: Mapping[str, Mapping[str, int]],
                         source: str = "the judgments") -> list[PairedBounds]:
    """The bounds of every row of a `compare_results` comparison that has a rank cutoff, with its
    settings (test, resamples, seed, Holm family). `qrels` must be the judgments the results were
    scored with (`source` names them in the error when they are not: `check_scored_with`)."""
    from recall_kit.decide.compare import Comparison

    if not isinstance(comparison, Comparison):
        raise TypeError("bounds_of_comparison takes a Comparison")
    metrics = boundable(comparison.metrics)
    if not metrics:
        raise BoundsError(f"None of the compared metrics ({', '.join(comparison.metrics)}) reads a top k: bounds need "
                          "one such as recall@5.")
    base = comparison.results[0]
    rankings = {label: result.rankings() for label, result in zip(comparison.labels, comparison.results, strict=True)}
    stratum_of = base.stratum_of()
    scopes: dict[str, tuple[str, ...]] = {"overall": tuple(base.query_ids)}
    for query in base.query_ids:
        scopes.setdefault(stratum_of[query], ())
    scopes = {scope: tuple(q for q in base.query_ids if scope == "overall" or stratum_of[q] == scope) for scope in scopes}
    # each row's own Holm family, as the comparison tested it (primary, with or without its strata)
    contrasts = [Contrast(comparison.baseline, row.system, row.metric, row.scope, scopes[row.scope], family=row.family)
                 for row in comparison.rows if row.metric in metrics and row.scope in scopes]
    try:
        holes = Holes(rankings, qrels, contrasts, test=comparison.test, n_resamples=comparison.n_resamples,
                      seed=comparison.seed, relevance_level=base.relevance_level)  # eval -l: as the results were scored
        check_scored_with(holes, {label: result.per_query for label, result in
                                  zip(comparison.labels, comparison.results, strict=True)}, source)
        return holes.bounds()
    except BoundsError as error:
        if "unjudged ids" not in str(error):
            raise
        raise BoundsError(f"{error} To bound anyway: compare with -m {','.join(fitting(comparison.metrics))} (each "
                          "metric at a k that always fits), or judge more of the tops first (recall-kit pool, then "
                          "recall-kit label or judge).") from None


def fitting(metrics: Sequence[str]) -> list[str]:
    """`metrics` with each rank cutoff that can be too deep for the bounds (`cutoff_problem`) cut to
    the deepest that always fits (recall@10 -> recall@6)."""
    out = []
    for name in metrics:
        problem = cutoff_problem(name)
        found = re.search(r"\(([^()]+@[0-9]+)\)$", problem) if problem else None
        out.append(found.group(1) if found else name)
    return list(dict.fromkeys(out))


#: Result files round their values; a difference past this is another set of judgments.
_SCORED_TOLERANCE = 1e-5


def check_scored_with(holes: Holes, per_query: Mapping[str, object], source: str) -> None:
    """Refuse judgments the results were not scored with: with every hole not relevant each
    system's value of each query must be the one its result holds (`per_query`: system ->
    ``metric -> {query: value}``). Raises `BoundsError` naming the first query that differs and
    how many do."""
    differ: list[tuple[str, str, str, float, float]] = []
    for contrast in holes.contrasts:
        if contrast.scope != "overall":
            continue
        for system, column in ((contrast.baseline, "baseline"), (contrast.candidate, "candidate")):
            stored = per_query[system](contrast.metric)  # type: ignore[operator]
            for query in contrast.query_ids:
                now = float(getattr(holes.table(contrast, query), column)[0])
                if abs(now - float(stored[query])) > _SCORED_TOLERANCE:
                    differ.append((system, contrast.metric, query, float(stored[query]), now))
    if differ:
        system, metric, query, stored_value, now = differ[0]
        raise BoundsError(f"{source} are not the judgments the results were scored with: {metric} of query {query!r} "
                          f"is {stored_value:.4f} in {system!r}'s result and {now:.4f} with them ({len(differ)} "
                          "values differ); give the qrels of the dataset the results ran on.")


def decision_contrasts(
    baseline: str,
    candidates: Sequence[str],
    metrics: Sequence[str],
    query_ids: Sequence[str],
    stratum_of: Mapping[str, str],
    watched: str | None = None,
    family: str = "decision",
) -> list[Contrast]:
    """The study's decision rows: every candidate against `baseline` on each metric, over all
    `query_ids` and per stratum (when there are several), one Holm `family`; with `watched`, only
    that candidate's rows are watched (the others count in the correction alone)."""
    scopes: dict[str, tuple[str, ...]] = {"overall": tuple(query_ids)}
    by: dict[str, list[str]] = {}
    for query in query_ids:
        by.setdefault(stratum_of[query], []).append(query)
    if len(by) > 1:
        scopes.update({name: tuple(ids) for name, ids in by.items()})
    return [Contrast(baseline, candidate, metric, scope, ids, family=family,
                     watched=watched is None or candidate == watched)
            for candidate in candidates for metric in metrics for scope, ids in scopes.items()]
