"""Prediction-powered intervals of a paired comparison's mean delta: valid whatever the holes hold.

Scoring every unjudged top-k hit as not relevant (trec_eval's convention) makes a paired bootstrap
precise about the wrong number when many hits are unjudged. Prediction-powered inference
(Angelopoulos et al., "Prediction-powered inference", Science 2023; PPI++, Angelopoulos, Duchi &
Zrnic 2024; for IR, Oosterhuis et al. 2024) combines a *predictor* on every query with a person's
labels on a random sample of queries, and gives an interval for the delta with every hole labelled
that is valid whatever the predictor's errors, and narrower the better it is.

Per contrast (`holes.Contrast`: candidate against baseline on a metric with a cutoff, over some
queries), each query's table (`holes.QueryHoles`) holds its delta under every labelling of its holes:

- a *decided* query's delta is the same under every labelling: it counts exactly;
- the *open* ones are the frame; a seeded random permutation of them is the sample, and the
  sample's longest prefix whose holes a person has all labelled is the labelled set (a sample drawn
  over several contrasts' open queries, as the study's, is every contrast's frame: a query of it
  that no label moves in one contrast has Y = Yhat there, so the labelled prefix is the same for all);
- Y is a labelled query's delta with the person's labels in its holes; Yhat any query's delta with
  the predictor's labels (expected over its probabilities: a judge's grade turned binary, or 0:
  "holes not relevant"); the open part's mean comes from ppi-python's ``ppi_mean_ci`` (power-tuned:
  PPI++), ``crossppi_mean_ci`` (a predictor fitted on the labelled pairs by cross-fitting), or
  ``classical_mean_ci`` (labelled only), and is weighted with the decided part's exact sum.

The estimand is the delta with every hole of the two tops labelled: a relevant memory neither
system put in its top k is not a hole, and no label of a hole can reveal it (it moves recall's R).
The number of labels an interval of a given width needs comes from ppi-python's power analysis
(``ppi_mean_power`` with the labelled pairs, else ``ppi_power`` with no help from the predictor).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from recall_kit.decide.holes import QueryHoles
from recall_kit.errors import RecallKitError
from recall_kit.portable import on_grid

ALPHA = 0.05
#: Fewer labelled queries than this give no interval: the interval is a normal (CLT) one, and with
#: per-query deltas of -1, 0 and 1 small samples hold the truth less often than they say (on LoCoMo
#: dev with half the evidence hidden, 30 labelled queries: 0.93 of 200 seeds for the study's
#: comparison, 0.85-0.90 of 40 for a larger delta; 50: 0.97; benchmarks/bench_holes.py,
#: docs/performance.md).
MIN_LABELLED = 50
#: A prediction's cost beside a person's label (1): near free, but not zero (the power analysis
#: divides by it).
PREDICTION_COST = 1e-3
#: Methods: the study's interval, cross-fitted prediction, and the labelled queries alone.
PPI, CROSS, LABELLED = "ppi++", "cross-ppi", "labelled only"
#: With every open query labelled the interval is the delta itself.
EXACT = "exact"

#: query id -> memory id -> probability the hole is relevant (absent: 0).
Predictions = Mapping[str, Mapping[str, float]]


class PPIError(RecallKitError, ValueError):
    """A prediction-powered interval cannot be computed as asked."""


def _ppi() -> Any:
    """ppi-python, imported on first use (it brings numba, statsmodels and scikit-learn)."""
    try:
        import ppi_py
    except ImportError as error:  # pragma: no cover - a dependency of the host
        raise PPIError("Hole-aware intervals need ppi-python: pip install ppi-python") from error
    return ppi_py


@dataclass(frozen=True)
class Interval:
    """One contrast's hole-aware interval of the mean delta (candidate - baseline)."""

    method: str
    delta: float
    low: float
    high: float
    #: Queries in the contrast, those counted exactly (decided), the open frame, the labelled prefix.
    n: int
    decided: int
    open: int
    labelled: int
    #: People's labels the labelled queries hold (their holes).
    labels: int
    predictor: str
    alpha: float = ALPHA

    @property
    def width(self) -> float:
        return self.high - self.low

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Interval:
        names = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in data.items() if key in names})  # type: ignore[arg-type]


@dataclass(frozen=True)
class LabelPlan:
    """What the power analysis says an interval of `width` needs: queries to label and their holes."""

    width: float
    queries: int
    labels: int
    #: ppi-python's PPI correlation (None: no labels yet, planned with none).
    correlation: float | None
    #: Every open query would have to be labelled (the interval is then the delta itself).
    everything: bool


# -- the frame and the sample -----------------------------------------------------------------------


def is_open(table: QueryHoles) -> bool:
    """Whether some labelling of the query's holes gives another delta."""
    return bool(table.delta[table.high] > table.delta[table.low])


def draw_sample(query_ids: Sequence[str], seed: int) -> list[str]:
    """A seeded random order of `query_ids` (sorted first, so the same set gives the same order)."""
    ordered = sorted(set(query_ids))
    rng = np.random.default_rng(seed)
    return [ordered[i] for i in rng.permutation(len(ordered))]


def labelling(table: QueryHoles, relevant: Callable[[str], bool]) -> int:
    """The column of `table` whose labelling makes exactly the holes `relevant` says relevant."""
    return sum(1 << j for j, doc in enumerate(table.holes) if relevant(doc))


def predicted_delta(table: QueryHoles, probability: Mapping[str, float]) -> float:
    """The query's expected delta when each hole is relevant with its `probability` (absent: 0),
    independently; a 0/1 predictor gives the delta of its one labelling."""
    if not table.holes:
        return float(table.delta[0])
    p = [min(max(float(probability.get(doc, 0.0)), 0.0), 1.0) for doc in table.holes]
    if all(value in (0.0, 1.0) for value in p):  # one labelling: its column, without the expectation
        return float(table.delta[sum(1 << j for j, value in enumerate(p) if value == 1.0)])
    bits = (np.arange(1 << len(p))[:, None] >> np.arange(len(p))) & 1
    weights = np.where(bits == 1, np.array(p), 1.0 - np.array(p)).prod(axis=1)
    return float(on_grid(weights @ table.delta))  # on the grid: the same on every CPU, however the sum ran


def fully_labelled(table: QueryHoles, labels: Mapping[str, int]) -> bool:
    return all(doc in labels and labels[doc] >= 0 for doc in table.holes)


def labelled_prefix(sample: Sequence[str], tables: Mapping[str, QueryHoles],
                    people: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The longest prefix of `sample` (the contrast's open queries, in the sample's order) whose
    holes people have all labelled: a random sample whatever they answered."""
    out = []
    for query in sample:
        if not fully_labelled(tables[query], people.get(query, {})):
            break
        out.append(query)
    return out


# -- the interval ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Parts:
    """One contrast split: the decided queries' exact sum, and the open ones' Y and Yhat."""

    n: int
    decided_sum: float
    decided: int
    labelled: list[str]
    unlabelled: list[str]
    y: np.ndarray
    yhat: np.ndarray
    yhat_rest: np.ndarray
    labels: int

    @property
    def open(self) -> int:
        return len(self.labelled) + len(self.unlabelled)

    def overall(self, low: float, high: float) -> tuple[float, float]:
        """An interval of the open queries' mean as one of every query's mean."""
        return ((self.decided_sum + self.open * low) / self.n, (self.decided_sum + self.open * high) / self.n)


def _split(tables: Mapping[str, QueryHoles], sample: Sequence[str], people: Mapping[str, Mapping[str, int]],
           predictions: Predictions, relevance_level: int) -> _Parts:
    # the frame: the sample's queries of this contrast, in order; a query the sample holds that no label
    # can move here (open for another contrast the sample serves) is in it too, its Y and Yhat equal
    frame = [q for q in sample if q in tables]
    framed = set(frame)
    decided = [q for q in tables if q not in framed and not is_open(tables[q])]
    labelled = labelled_prefix(frame, tables, people)
    rest = frame[len(labelled):]
    y = np.array([_person_delta(tables[q], people[q], relevance_level) for q in labelled], dtype=float)
    yhat = np.array([predicted_delta(tables[q], predictions.get(q, {})) for q in labelled], dtype=float)
    yhat_rest = np.array([predicted_delta(tables[q], predictions.get(q, {})) for q in rest], dtype=float)
    missing = [q for q in tables if is_open(tables[q]) and q not in framed]
    if missing:
        raise PPIError(f"Query {missing[0]!r} is open (a label can move its delta) but not in the sample.")
    return _Parts(n=len(tables), decided_sum=float(sum(tables[q].delta[0] for q in decided)), decided=len(decided),
                  labelled=labelled, unlabelled=rest, y=y, yhat=yhat, yhat_rest=yhat_rest,
                  labels=sum(len(tables[q].holes) for q in labelled))


def _person_delta(table: QueryHoles, labels: Mapping[str, int], relevance_level: int) -> float:
    """The query's delta with a person's labels in its holes, read with the metric's own gain (a
    grade of 3 is not a 1 to nDCG: `QueryHoles.delta_with`)."""
    return table.delta_with({doc: labels[doc] for doc in table.holes}, relevance_level)


def interval(tables: Mapping[str, QueryHoles], sample: Sequence[str], people: Mapping[str, Mapping[str, int]],
             predictions: Predictions | None = None, *, method: str = PPI, predictor: str = "holes not relevant",
             alpha: float = ALPHA, relevance_level: int = 1, cross: Sequence[Predictions] | None = None,
             min_labelled: int | None = None) -> Interval | None:
    """The hole-aware interval of one contrast's mean delta, or None with too few labelled queries.

    `tables`: each query of the contrast -> its table (holes from the judgments *without* the
    people's labels, so the frame does not move as labels arrive); `sample`: the contrast's queries
    in the sample's order (every open one); `people`: query -> memory -> a person's grade;
    `predictions`: the predictor's probabilities (None: every hole not relevant). `method` PPI uses
    ``ppi_mean_ci`` (PPI++ power tuning); LABELLED ``classical_mean_ci`` on the labelled queries;
    CROSS ``crossppi_mean_ci`` with `cross`, one predictions map per fold, each fitted without the
    labelled queries it predicts (`cross_predictions`). Fewer labelled queries than `min_labelled`
    (default `MIN_LABELLED`) give None.
    """
    parts = _split(tables, sample, people, predictions or {}, relevance_level)
    common = {"n": parts.n, "decided": parts.decided, "open": parts.open, "labelled": len(parts.labelled),
              "labels": parts.labels, "predictor": predictor, "alpha": alpha}
    if not parts.unlabelled:  # every open query labelled (or none open): the delta itself
        value = (parts.decided_sum + float(parts.y.sum())) / max(parts.n, 1)
        return Interval(method=EXACT, delta=value, low=value, high=value, **common)  # type: ignore[arg-type]
    if len(parts.labelled) < max(MIN_LABELLED if min_labelled is None else min_labelled, 2):
        return None
    ppi = _ppi()
    if method == PPI:
        # a constant predictor leaves PPI++ no variance to tune on (0/0): lam 1 is then the classical mean
        lam = 1.0 if np.ptp(np.concatenate([parts.yhat, parts.yhat_rest])) == 0 else None
        low, high = ppi.ppi_mean_ci(parts.y, parts.yhat, parts.yhat_rest, alpha=alpha, lam=lam)
        centre = ppi.ppi_mean_pointestimate(parts.y, parts.yhat, parts.yhat_rest, lam=lam)
    elif method == LABELLED:
        low, high = ppi.classical_mean_ci(parts.y, alpha=alpha)
        centre = parts.y.mean()
    elif method == CROSS:
        if not cross:
            raise PPIError("Cross-prediction needs one predictions map per fold (cross_predictions).")
        yhat, rest = _cross_columns(tables, parts, cross)
        low, high = ppi.crossppi_mean_ci(parts.y, yhat, rest, alpha=alpha)
        centre = ppi.crossppi_mean_pointestimate(parts.y, yhat, rest)
    else:
        raise PPIError(f"Unknown method {method!r}: one of {PPI}, {CROSS}, {LABELLED}.")
    low, high = parts.overall(float(np.ravel(low)[0]), float(np.ravel(high)[0]))
    delta = parts.overall(float(np.ravel(centre)[0]), 0.0)[0]
    return Interval(method=method, delta=delta, low=low, high=high, **common)  # type: ignore[arg-type]


def _cross_columns(tables: Mapping[str, QueryHoles], parts: _Parts,
                   cross: Sequence[Predictions]) -> tuple[np.ndarray, np.ndarray]:
    """Yhat of each labelled query from the fold that did not see it, and every fold's Yhat of the rest."""
    folds = fold_of(parts.labelled, len(cross))
    yhat = np.array([predicted_delta(tables[q], cross[folds[q]].get(q, {})) for q in parts.labelled])
    rest = np.array([[predicted_delta(tables[q], fold.get(q, {})) for fold in cross] for q in parts.unlabelled])
    return yhat, rest.reshape(len(parts.unlabelled), len(cross))


def fold_of(labelled: Sequence[str], folds: int) -> dict[str, int]:
    """Each labelled query's fold: round robin in the sample's order (itself random)."""
    return {query: index % folds for index, query in enumerate(labelled)}


def cross_predictions(features: Mapping[tuple[str, str], Sequence[float]], people: Mapping[str, Mapping[str, int]],
                      labelled: Sequence[str], folds: int = 5, relevance_level: int = 1,
                      seed: int = 0) -> list[dict[str, dict[str, float]]]:
    """One predictions map per fold: a logistic regression on the features of the labelled queries'
    pairs outside the fold, applied to every pair (`features`: (query, id) -> numbers, e.g. each
    system's reciprocal rank, leg scores, a judge's grade). A fold with one class predicts its rate."""
    from sklearn.linear_model import LogisticRegression

    assignment = fold_of(labelled, folds)
    pairs = list(features)
    matrix = np.array([list(features[p]) for p in pairs], dtype=float)
    fold = np.array([assignment.get(q, -1) for q, _ in pairs])
    grade = np.array([people.get(q, {}).get(d, -1) for q, d in pairs])
    out = []
    for index in range(folds):
        train = np.flatnonzero((fold >= 0) & (fold != index) & (grade >= 0))
        target = (grade[train] >= relevance_level).astype(int)
        if len(train) == 0:
            probability = np.zeros(len(pairs))
        elif target.min() == target.max():
            probability = np.full(len(pairs), float(target[0]))
        else:
            model = LogisticRegression(solver="liblinear", random_state=seed).fit(matrix[train], target)
            probability = model.predict_proba(matrix)[:, 1]
        fold_map: dict[str, dict[str, float]] = {}
        for (query, doc), p in zip(pairs, probability.tolist(), strict=True):
            fold_map.setdefault(query, {})[doc] = p
        out.append(fold_map)
    return out


# -- how many labels ------------------------------------------------------------------------------


def plan_labels(tables: Mapping[str, QueryHoles], sample: Sequence[str], people: Mapping[str, Mapping[str, int]],
                width: float, predictions: Predictions | None = None, *, alpha: float = ALPHA,
                relevance_level: int = 1) -> LabelPlan:
    """How many open queries (and their holes) a PPI interval of total `width` needs.

    With labelled queries, ppi-python's ``ppi_mean_power`` on them (their spread and the predictor's
    PPI correlation); without, ``ppi_power`` with correlation 0 (no help from the predictor) and the
    spread of the predictor's deltas over the frame standing in for the labels'."""
    from scipy.stats import norm

    if width <= 0:
        raise PPIError(f"width must be positive, not {width}")
    parts = _split(tables, sample, people, predictions or {}, relevance_level)
    frame = parts.open
    per_query = (sum(len(tables[q].holes) for q in [*parts.labelled, *parts.unlabelled]) / frame) if frame else 0.0
    if frame == 0:
        return LabelPlan(width, 0, 0, None, False)
    labelled = len(parts.labelled) >= MIN_LABELLED
    spread = float(parts.y.std()) if labelled else float(np.concatenate([parts.yhat, parts.yhat_rest]).std())
    open_width = width * parts.n / frame  # the open part's mean is scaled by frame / n in the overall one
    z = float(norm.ppf(1 - alpha / 2))
    effective = max(int(np.ceil((2 * z * spread / open_width) ** 2)), MIN_LABELLED)
    ppi = _ppi()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ppi-python warns when the size exceeds the frame: we say it
        if labelled and np.ptp(parts.yhat) > 0 and spread > 0:
            found = ppi.ppi_mean_power(parts.y, parts.yhat, cost_Y=1.0,
                                       cost_Yhat=PREDICTION_COST, effective_n=effective, n_max=frame)
        else:
            found = ppi.ppi_power(0.0, cost_X=0.0, cost_Y=1.0, cost_Yhat=PREDICTION_COST,
                                  effective_n=effective, n_max=frame)
    queries = min(max(int(found["n"]), MIN_LABELLED), frame)
    correlation = float(found["ppi_corr"]) if labelled else None
    return LabelPlan(width=width, queries=queries, labels=int(round(queries * per_query)),
                     correlation=correlation, everything=queries >= frame)
