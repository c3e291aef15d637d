"""Agreement between two relevance judges (`recall-kit agreement A B`): Cohen's kappa, linearly
weighted kappa for graded judgments, a bootstrap interval for each, the confusion matrix, and how
much of the two files was judged by both. Ids and numbers only, never text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.errors import DatasetError, OptionError
from recall_kit.types import Qrels

#: Below this kappa the judges agree no more than "moderately" (Landis & Koch, 1977): a model
#: judge under it should not stand in for a person.
WARN_BELOW = 0.6
#: The widest grade span shown as every integer in it; beyond it (grades 0 and 1000) only the
#: grades given are categories: the weighted kappa is the same, the matrix stays small.
MAX_SPAN = 10


def cohen_kappa(confusion: Sequence[Sequence[float]], weighted: bool = False,
                labels: Sequence[int] | None = None) -> float:
    """Cohen's kappa of a K x K confusion matrix (rows: judge A's category, columns: judge B's).

    kappa = 1 - sum(w * O) / sum(w * E), where O is the observed matrix, E the product of its
    margins divided by the total (agreement by chance) and w the disagreement weight: 1 off the
    diagonal (unweighted, Cohen 1960) or |i - j| (linear weights, Cohen 1968; categories are
    the steps of the grade scale; with `labels`, |labels[i] - labels[j]|, the same number
    when the categories left out of the matrix were empty). NaN when chance agreement is total
    (one category only).
    """
    size = len(confusion)
    total = sum(sum(row) for row in confusion)
    if total == 0:
        return math.nan
    rows = [sum(row) for row in confusion]
    columns = [sum(confusion[i][j] for i in range(size)) for j in range(size)]
    observed = expected = 0.0
    for i in range(size):
        for j in range(size):
            steps = abs(labels[i] - labels[j]) if labels is not None else abs(i - j)
            weight = steps if weighted else float(i != j)
            observed += weight * confusion[i][j]
            expected += weight * rows[i] * columns[j] / total
    if expected == 0:
        return math.nan
    return 1.0 - observed / expected


@dataclass(frozen=True)
class BinaryMeasures:
    """A judge's binary calls (grade >= 1) against reference labels: Cohen's kappa with its
    bootstrap interval, sensitivity (the share of relevant pairs it calls relevant) and
    specificity (the share of non-relevant pairs it calls not relevant), each with a Wilson
    interval: what a prediction-powered interval's predictor is judged by."""

    n: int
    #: Pairs the reference calls relevant.
    positives: int
    kappa: float
    kappa_ci: tuple[float, float] | None
    sensitivity: float
    sensitivity_ci: tuple[float, float] | None
    specificity: float
    specificity_ci: tuple[float, float] | None

    def to_dict(self) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return None if math.isnan(value) else round(value, 6)

        def interval(ci: tuple[float, float] | None) -> list[float] | None:
            return None if ci is None else [round(ci[0], 6), round(ci[1], 6)]

        return {"n": self.n, "positives": self.positives, "kappa": number(self.kappa),
                "kappa_ci": interval(self.kappa_ci), "sensitivity": number(self.sensitivity),
                "sensitivity_ci": interval(self.sensitivity_ci), "specificity": number(self.specificity),
                "specificity_ci": interval(self.specificity_ci)}

    def line(self, name: str) -> str:
        def show(value: float, ci: tuple[float, float] | None) -> str:
            if math.isnan(value):
                return "n/a"
            return f"{value:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

        return (f"{name}: n {self.n} ({self.positives} relevant), kappa {show(self.kappa, self.kappa_ci)}, "
                f"sensitivity {show(self.sensitivity, self.sensitivity_ci)}, "
                f"specificity {show(self.specificity, self.specificity_ci)}")


def wilson_interval(successes: int, total: int, level: float = 0.95) -> tuple[float, float] | None:
    """Wilson's score interval of a proportion (Wilson 1927; Brown, Cai & DasGupta 2001 recommend
    it over the normal one for small counts). None when `total` is 0."""
    from statistics import NormalDist

    if total == 0:
        return None
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    share = successes / total
    centre = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def binary_measures(reference: Sequence[int], judged: Sequence[int], samples: int = 2000, level: float = 0.95,
                    seed: int = 0) -> BinaryMeasures:
    """`judged`'s binary calls measured against `reference`'s (grades; >= 1 is relevant), pair by pair."""
    truth = [int(grade >= 1) for grade in reference]
    calls = [int(grade >= 1) for grade in judged]
    confusion = _confusion(truth, calls, [0, 1])
    kappa = cohen_kappa(confusion)
    kappa_ci = None
    if samples and not math.isnan(kappa):
        kappa_ci = _bootstrap(truth, calls, [0, 1], samples, level, seed)[0]
    (true_negative, false_positive), (false_negative, true_positive) = confusion
    positives, negatives = true_positive + false_negative, true_negative + false_positive
    return BinaryMeasures(
        n=len(truth), positives=positives, kappa=kappa, kappa_ci=kappa_ci,
        sensitivity=true_positive / positives if positives else math.nan,
        sensitivity_ci=wilson_interval(true_positive, positives, level),
        specificity=true_negative / negatives if negatives else math.nan,
        specificity_ci=wilson_interval(true_negative, negatives, level))


def measures_by_stratum(reference: Qrels, judged: Qrels, strata: dict[str, str], samples: int = 2000,
                        level: float = 0.95, seed: int = 0) -> dict[str, BinaryMeasures]:
    """`binary_measures` over the pairs both judged, overall ("all") and per stratum of their query
    (`strata`: query id -> stratum; queries not in it fall under "unknown"; empty: overall only)."""
    groups: dict[str, tuple[list[int], list[int]]] = {"all": ([], [])}
    for query_id, grades in sorted(reference.items()):
        found = judged.get(query_id, {})
        names = ("all", strata.get(query_id, "unknown")) if strata else ("all",)
        for doc, grade in sorted(grades.items()):
            if doc in found:
                for name in names:
                    groups.setdefault(name, ([], []))[0].append(grade)
                    groups[name][1].append(found[doc])
    return {name: binary_measures(truth, calls, samples, level, seed)
            for name, (truth, calls) in sorted(groups.items(), key=lambda item: (item[0] != "all", item[0]))
            if truth}


@dataclass
class Agreement:
    """Two judges compared on the (query, id) pairs both judged."""

    path_a: str
    path_b: str
    #: The grade scale: every integer from the lowest grade either judge gave to the highest
    #: (only the grades given, when that span is wider than MAX_SPAN).
    labels: list[int]
    #: confusion[i][j]: pairs judge A graded labels[i] and judge B graded labels[j].
    confusion: list[list[int]]
    kappa: float
    weighted_kappa: float
    #: 95% (or `level`) percentile bootstrap intervals over pairs; None when kappa is undefined.
    kappa_ci: tuple[float, float] | None
    weighted_kappa_ci: tuple[float, float] | None
    only_a: int
    only_b: int
    level: float = 0.95
    samples: int = 2000
    binary: bool = False
    warnings: list[str] = field(default_factory=list)
    #: B's binary calls against A's taken as the reference, overall ("all") and per stratum
    #: (when the dataset's strata are known).
    strata: dict[str, BinaryMeasures] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Pairs judged by both."""
        return sum(sum(row) for row in self.confusion)

    @property
    def share_both(self) -> float:
        """Pairs judged by both, over pairs judged by either."""
        either = self.n + self.only_a + self.only_b
        return self.n / either if either else 0.0

    def to_dict(self) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return None if math.isnan(value) else round(value, 6)

        def interval(ci: tuple[float, float] | None) -> list[float] | None:
            return None if ci is None else [round(ci[0], 6), round(ci[1], 6)]

        return {
            "a": self.path_a, "b": self.path_b,
            "kappa": number(self.kappa), "weighted_kappa": number(self.weighted_kappa),
            "kappa_ci": interval(self.kappa_ci), "weighted_kappa_ci": interval(self.weighted_kappa_ci),
            "ci_level": self.level, "bootstrap_samples": self.samples,
            "n": self.n, "only_a": self.only_a, "only_b": self.only_b,
            "share_both": round(self.share_both, 6), "binary": self.binary,
            "labels": self.labels, "confusion": self.confusion, "warnings": self.warnings,
            "binary_against_a": {name: found.to_dict() for name, found in self.strata.items()},
        }

    def lines(self) -> list[str]:
        def show(value: float, ci: tuple[float, float] | None) -> str:
            if math.isnan(value):
                return "undefined (one grade only: agreement by chance is total)"
            return f"{value:.3f}" + (f"  [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

        percent = f"{self.level:.0%}"
        out = [
            f"pairs judged by both: {self.n} ({self.share_both:.1%} of {self.n + self.only_a + self.only_b}; "
            f"only A {self.only_a}, only B {self.only_b})",
            f"Cohen's kappa:            {show(self.kappa, self.kappa_ci)}",
            f"weighted kappa (linear):  {show(self.weighted_kappa, self.weighted_kappa_ci)}",
            *([f"({percent} bootstrap intervals over pairs, {self.samples} samples)"] if self.kappa_ci else []),
            "confusion (rows: A, columns: B):",
            "       " + "".join(f"{label:>6}" for label in self.labels),
        ]
        for label, row in zip(self.labels, self.confusion):
            out.append(f"  {label:>4} " + "".join(f"{count:>6}" for count in row))
        if self.strata:
            out.append("B against A taken as the reference (relevant: grade >= 1; Wilson intervals):")
            out += ["  " + found.line(name) for name, found in self.strata.items()]
        return out


def paired_grades(a: Qrels, b: Qrels, binary: bool = False) -> tuple[list[int], list[int], int, int]:
    """The grades of every (query, id) pair judged in both, in a fixed order, and the counts of
    pairs judged in only one. `binary`: grades >= 1 become 1, others 0."""
    def grade(value: int) -> int:
        return int(value >= 1) if binary else int(value)

    pairs_a = {(query, doc): g for query, grades in a.items() for doc, g in grades.items()}
    pairs_b = {(query, doc): g for query, grades in b.items() for doc, g in grades.items()}
    both = sorted(set(pairs_a) & set(pairs_b))
    return ([grade(pairs_a[pair]) for pair in both], [grade(pairs_b[pair]) for pair in both],
            len(set(pairs_a) - set(pairs_b)), len(set(pairs_b) - set(pairs_a)))


def _confusion(grades_a: Sequence[int], grades_b: Sequence[int], labels: Sequence[int]) -> list[list[int]]:
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for x, y in zip(grades_a, grades_b, strict=True):
        matrix[index[x]][index[y]] += 1
    return matrix


def _bootstrap(grades_a: Sequence[int], grades_b: Sequence[int], labels: Sequence[int], samples: int,
               level: float, seed: int) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Percentile intervals of kappa and weighted kappa over pairs resampled with replacement.
    Resamples where kappa is undefined (one category only) are left out."""
    import numpy as np

    size = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    cells = np.array([index[x] * size + index[y] for x, y in zip(grades_a, grades_b, strict=True)])
    rng = np.random.default_rng(seed)
    plain, weighted = [], []
    for _ in range(samples):
        drawn = cells[rng.integers(0, len(cells), len(cells))]
        matrix = np.bincount(drawn, minlength=size * size).reshape(size, size).tolist()
        plain.append(cohen_kappa(matrix))
        weighted.append(cohen_kappa(matrix, weighted=True, labels=labels))

    def interval(values: list[float]) -> tuple[float, float] | None:
        kept = np.array([v for v in values if not math.isnan(v)])
        if not len(kept):
            return None
        tail = (1 - level) / 2 * 100
        low, high = np.percentile(kept, [tail, 100 - tail])
        return float(low), float(high)

    return interval(plain), interval(weighted)


def agreement(a: Qrels, b: Qrels, binary: bool = False, samples: int = 2000, level: float = 0.95,
              seed: int = 0, path_a: str = "A", path_b: str = "B", strata: dict[str, str] | None = None) -> Agreement:
    """Compare two judges' qrels on the pairs both judged; B's binary calls are also measured
    against A's (kappa, sensitivity, specificity), per stratum of `strata` (query id -> stratum)."""
    if samples < 0:
        raise OptionError("--resamples must be at least 0.")
    if not 0 < level < 1:
        raise OptionError("--level must lie between 0 and 1.")
    grades_a, grades_b, only_a, only_b = paired_grades(a, b, binary)
    if not grades_a:
        raise DatasetError(f"{path_a} and {path_b} judge no (query, id) pair in common: nothing to compare "
                           "(a pool leaves out the ids a dataset's qrels judge; to measure a model judge against "
                           "labels, use recall-kit judge --calibrate).")
    observed = set(grades_a) | set(grades_b)
    span = max(observed) - min(observed)
    labels = list(range(min(observed), max(observed) + 1)) if span <= MAX_SPAN else sorted(observed)
    confusion = _confusion(grades_a, grades_b, labels)
    kappa = cohen_kappa(confusion)
    weighted = cohen_kappa(confusion, weighted=True, labels=labels)
    kappa_ci = weighted_ci = None
    if samples and not math.isnan(kappa):
        kappa_ci, weighted_ci = _bootstrap(grades_a, grades_b, labels, samples, level, seed)
    result = Agreement(path_a, path_b, labels, confusion, kappa, weighted, kappa_ci, weighted_ci,
                       only_a, only_b, level, samples, binary,
                       strata=measures_by_stratum(a, b, strata or {}, samples, level, seed))
    for name, value in (("kappa", kappa), ("weighted kappa", weighted)):
        if not math.isnan(value) and value < WARN_BELOW:
            result.warnings.append(
                f"{name} {value:.3f} is below {WARN_BELOW}: these judges agree too little for one to "
                "stand in for the other; judge more yourself, or change the judge."
            )
    if math.isnan(kappa):
        result.warnings.append("kappa is undefined: every pair got one grade from both judges.")
    return result


def read_judgments(path: Path) -> Qrels:
    """A qrels file read exactly as the other commands read it: a recall-kit qrels.jsonl (its
    first line JSON, read as a dataset's qrels.jsonl is) or TREC qrels (`qid iter docid
    rel`, read as `score` reads it). Anything wrong is one DatasetError naming file and line."""
    from recall_kit.dataset import read_qrels_jsonl
    from recall_kit.measure.score.trec import read_qrels

    with path.open("rb") as handle:
        for raw in handle:
            start = raw.lstrip()
            if start and not start.startswith(b"#"):
                break
        else:
            start = b""
    if start.startswith((b"{", b"[")):  # JSON: a row that is not an object is refused by line
        return read_qrels_jsonl(path)
    return read_qrels(path)


def agreement_files(path_a: str | Path, path_b: str | Path, dataset_path: str | Path | None = None,
                    **settings: Any) -> Agreement:
    """`recall-kit agreement A B`: read two qrels files and compare them (per stratum of the
    dataset's queries, when `dataset_path` is given)."""
    read = []
    for path in (Path(path_a), Path(path_b)):
        if not path.is_file():
            raise DatasetError(f"{path}: no such qrels file.")
        read.append(read_judgments(path))
    if dataset_path is not None:
        from recall_kit.dataset import load_dataset

        settings["strata"] = {query.query_id: query.stratum for query in load_dataset(dataset_path).queries}
    return agreement(read[0], read[1], path_a=str(path_a), path_b=str(path_b), **settings)
