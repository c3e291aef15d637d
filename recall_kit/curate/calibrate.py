"""Judge calibration (`recall-kit judge --calibrate`): may a model judge stand in for a person on
this store? A balanced sample of (query, memory) pairs whose labels are known (each query's
labelled positive and the hard negative the candidate systems rank highest), graded by the
judge, compared with the labels: Cohen's kappa with its bootstrap interval, the confusion matrix,
the share of positives, and a verdict. Ids and numbers only, never text.

A dataset's qrels hold positives only, and `pool` leaves judged ids out, so `agreement` between
a model's pool grades and the qrels compares nothing; calibration builds a sample that has both
kinds of label."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.curate.agreement import WARN_BELOW, Agreement, agreement
from recall_kit.curate.judge import judge_with, read_qrels_file
from recall_kit.dataset import Dataset, load_dataset
from recall_kit.errors import DatasetError, OptionError
from recall_kit.fileio import write_jsonl_atomic
from recall_kit.types import DocId, Qrels, RelevanceJudge

#: The verdict's rule: the judge may stand in for a person when kappa's interval lies at or
#: above this (Landis & Koch's "substantial" agreement), the same threshold `agreement` warns at.
STAND_IN_KAPPA = WARN_BELOW


@dataclass(frozen=True)
class CalibrationPair:
    query_id: str
    doc_id: DocId
    #: The reference label: 1 relevant, 0 not.
    label: int
    #: The best rank any candidate system gave it (None: no system ranked it).
    rank: int | None


def pooled_sample(dataset: Dataset, rankings: Sequence[dict[str, list[str]]], labels: Qrels | None,
                  depth: int) -> list[CalibrationPair]:
    """Every pair a judge meets in a pool, with its label: per query with labels, the top `depth`
    of every ranking and the labelled relevant ids (the issue's 4,514 LoCoMo pairs are each
    question's bm25 top 5 and its evidence turns). Labels as in `calibration_sample`: a person's
    (unlabelled pairs left out) or the dataset's qrels taken as complete."""
    if depth < 1:
        raise OptionError(f"--depth must be at least 1, got {depth}.")
    reference = labels if labels is not None else dataset.qrels
    sample: list[CalibrationPair] = []
    for query in dataset.queries:
        grades = reference.get(query.query_id, {})
        if not grades:
            continue
        best: dict[str, int] = {}
        for ranking in rankings:
            for rank, doc in enumerate(ranking.get(query.query_id, ())[:depth], start=1):
                best[str(doc)] = min(best.get(str(doc), rank), rank)
        candidates = list(best) + sorted(doc for doc, grade in grades.items() if grade >= 1 and doc not in best)
        for doc in candidates:
            if doc not in dataset.corpus or (labels is not None and doc not in grades):
                continue
            sample.append(CalibrationPair(query.query_id, doc, int(grades.get(doc, 0) >= 1), best.get(doc)))
    return sample


def calibration_sample(dataset: Dataset, rankings: Sequence[dict[str, list[str]]], labels: Qrels | None = None,
                       pairs: int | None = None, seed: int = 0) -> list[CalibrationPair]:
    """Per query, one positive and one hard negative: a balanced sample.

    Labels come from `labels` (a person's judgments: grade >= 1 relevant, 0 not; unjudged ids are
    never used) or, when None, from the dataset's qrels, taken as complete (every id they do not
    list is not relevant). The positive is the relevant id the systems rank best (else the
    highest-graded one); the negative is the best-ranked id labelled not relevant (ties: the one
    more systems rank), what a judge finds hardest to reject. Queries without both are left out. `pairs` (even): a seeded random
    subset of pairs / 2 queries."""
    reference = labels if labels is not None else dataset.qrels
    sample: list[tuple[CalibrationPair, CalibrationPair]] = []
    for query in dataset.queries:
        grades = reference.get(query.query_id, {})
        best: dict[str, int] = {}
        systems: dict[str, int] = {}
        for ranking in rankings:
            for rank, doc in enumerate(ranking.get(query.query_id, ()), start=1):
                best[str(doc)] = min(best.get(str(doc), rank), rank)
                systems[str(doc)] = systems.get(str(doc), 0) + 1
        positives = [doc for doc, grade in grades.items() if grade >= 1]
        if not positives:
            continue
        positive = min(positives, key=lambda doc: (best.get(doc, math.inf), -grades[doc], doc))
        if labels is not None:
            negatives = [doc for doc, grade in grades.items() if grade == 0 and doc in best]
        else:
            negatives = [doc for doc in best if doc not in grades or grades[doc] == 0]
        negatives = [doc for doc in negatives if doc in dataset.corpus]
        if not negatives:
            continue
        negative = min(negatives, key=lambda doc: (best[doc], -systems[doc], doc))
        sample.append((CalibrationPair(query.query_id, positive, 1, best.get(positive)),
                       CalibrationPair(query.query_id, negative, 0, best[negative])))
    if pairs is not None:
        if pairs < 2 or pairs % 2:
            raise OptionError(f"--pairs must be an even number of at least 2 (one positive and one negative a query), got {pairs}.")
        if pairs // 2 < len(sample):
            chosen = set(random.Random(seed).sample(range(len(sample)), pairs // 2))
            sample = [item for index, item in enumerate(sample) if index in chosen]
    return [pair for both in sample for pair in both]


@dataclass
class Calibration:
    """A judge measured against known labels."""

    judge: dict[str, Any]
    label_source: str
    pairs: list[CalibrationPair]
    #: The judge's binary agreement with the labels (None when it graded no pair).
    agreement: Agreement | None
    graded: int
    skipped: int
    warnings: list[str] = field(default_factory=list)
    #: Seconds the judge took to fit and grade the sample (None: every grade was already on file).
    seconds: float | None = None
    #: How the sample was drawn: "balanced" (a positive and a hard negative a query) or "pool@N".
    sample_kind: str = "balanced"

    @property
    def share_positive(self) -> float:
        """Share of the sample labelled relevant (0.5 for a balanced sample)."""
        return sum(pair.label for pair in self.pairs) / len(self.pairs) if self.pairs else math.nan

    @property
    def judge_share_positive(self) -> float:
        """Share of the graded pairs the judge called relevant (grade >= 1)."""
        if not self.agreement or not self.agreement.n:
            return math.nan
        labels, matrix = self.agreement.labels, self.agreement.confusion
        return sum(matrix[i][labels.index(1)] for i in range(len(labels)) if 1 in labels) / self.agreement.n

    @property
    def verdict(self) -> str:
        """Whether the judge may stand in for a person, by the rule in `STAND_IN_KAPPA`."""
        found = self.agreement
        if found is None or math.isnan(found.kappa):
            return "no verdict: kappa is undefined (the judge graded nothing, or gave one answer to every pair)"
        low = found.kappa_ci[0] if found.kappa_ci else found.kappa
        if low >= STAND_IN_KAPPA:
            return (f"yes: the judge may stand in for a person on this store (kappa's lower bound {low:.3f} "
                    f">= {STAND_IN_KAPPA})")
        if found.kappa >= STAND_IN_KAPPA:
            return (f"not shown: kappa {found.kappa:.3f} >= {STAND_IN_KAPPA} but its interval reaches "
                    f"{low:.3f}; calibrate on more pairs")
        return (f"no: kappa {found.kappa:.3f} < {STAND_IN_KAPPA}; this judge may not stand in for a person "
                "(its labels are a threat to any conclusion drawn from them)")

    def to_dict(self) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return None if math.isnan(value) else round(value, 6)

        return {
            "judge": self.judge, "label_source": self.label_source, "pairs": len(self.pairs),
            "graded": self.graded, "skipped": self.skipped,
            "share_positive": number(self.share_positive), "judge_share_positive": number(self.judge_share_positive),
            "stand_in_kappa": STAND_IN_KAPPA, "verdict": self.verdict, "sample": self.sample_kind,
            "agreement": self.agreement.to_dict() if self.agreement else None, "warnings": self.warnings,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "seconds_per_1000_pairs": self.seconds_per_1000(),
        }

    def seconds_per_1000(self) -> float | None:
        """The judge's time per 1,000 pairs graded (fitting included), when it graded any."""
        if self.seconds is None or not self.graded:
            return None
        return round(self.seconds / self.graded * 1000, 3)

    def lines(self) -> list[str]:
        queries = len({pair.query_id for pair in self.pairs})
        out = [
            f"calibration sample ({self.sample_kind}): {len(self.pairs)} pairs over {queries} queries ({self.label_source}); "
            f"share labelled relevant {self.share_positive:.1%}",
            f"graded by the judge: {self.graded}" + (f" ({self.skipped} without a usable answer)" if self.skipped else ""),
        ]
        if self.agreement is not None:
            out.append(f"judge calls relevant: {self.judge_share_positive:.1%}")
            out += [line.replace("rows: A, columns: B", "rows: labels, columns: judge")
                    .replace("B against A taken as the reference", "the judge against the labels")
                    for line in self.agreement.lines() if not line.startswith("weighted kappa")]
        if self.seconds_per_1000() is not None:
            out.append(f"time: {self.seconds:.1f} s, {self.seconds_per_1000():.2f} s per 1,000 pairs")
        out.append(f"verdict: {self.verdict}")
        out.append(f"rule: a judge stands in for a person when the lower end of kappa's interval is >= {STAND_IN_KAPPA}.")
        return out


def calibrate(judge: RelevanceJudge, dataset_path: str | Path, result_paths: Sequence[str | Path], out: str | Path,
              labels_path: str | Path | None = None, pairs: int | None = None, seed: int = 0, samples: int = 2000,
              show: Callable[[str], None] = print, depth: int | None = None) -> Calibration:
    """`recall-kit judge --calibrate`: sample, grade with `judge` (its grades in `out`, resumable,
    the sample beside it in OUT.sample.jsonl), compare with the labels. `depth`: every pair of
    the systems' top `depth` and the labelled relevant ones (`pooled_sample`) instead of the
    balanced sample. A judge that learns is fitted on the sample's labels, cross-fitted (it
    never grades a pair with a model that saw its label)."""
    from recall_kit.curate.evidence import judging_context
    from recall_kit.measure.result import load_results

    if not result_paths:
        raise OptionError("--calibrate needs the result files of the candidate systems (recall-kit eval ... --json R.json): "
                          "their top-ranked non-relevant memories are the hard negatives.")
    if depth is not None and pairs is not None:
        raise OptionError("--pairs draws a balanced sample; --depth takes every pair of the top N: give one.")
    out = Path(out)
    judge.prepare()
    dataset = load_dataset(dataset_path)
    named = load_results(result_paths)
    for label, result in named:
        if result.fingerprint != dataset.fingerprint:
            raise DatasetError(f"{label}: its results were run on another version of {dataset.name!r}; re-run eval.")
    labels = read_qrels_file(Path(labels_path)) if labels_path is not None else None
    if labels_path is not None and not labels:
        raise DatasetError(f"{labels_path}: holds no judgments.")
    rankings = [result.rankings() for _, result in named]
    sample = (pooled_sample(dataset, rankings, labels, depth) if depth is not None
              else calibration_sample(dataset, rankings, labels, pairs, seed))
    if not sample:
        raise DatasetError("No query has both a relevant and a non-relevant labelled memory among the systems' rankings: "
                           "nothing to calibrate on" + (" (judge some of the systems' top results yourself)" if labels is not None else "") + ".")
    reference = _reference(sample)
    sample_path = out.with_name(out.name + ".sample.jsonl")
    _write_sample(sample, sample_path)
    context = judging_context(dataset, [(str(name), result) for name, result in named], reference, seed) \
        if judge.learns else None
    started = time.monotonic()
    counts = judge_with(judge, sample_path, dataset_path, out, show=show, context=context)
    seconds = time.monotonic() - started if counts["graded"] else None
    model = _grades_on(read_qrels_file(out), reference)
    source = (f"labels from {labels_path}" if labels_path is not None
              else "the dataset's qrels, taken as complete: unlisted ids count as not relevant")
    strata = {query.query_id: query.stratum for query in dataset.queries}
    compared = agreement(reference, model, binary=True, samples=samples, seed=seed, path_a="labels",
                         path_b=str(out), strata=strata) if model else None
    calibration = Calibration(judge=dict(judge.provenance()), label_source=source, pairs=sample, agreement=compared,
                              graded=sum(len(found) for found in model.values()), skipped=counts["skipped"],
                              seconds=seconds, sample_kind="balanced" if depth is None else f"pool@{depth}")
    if compared is not None:
        calibration.warnings = [w for w in compared.warnings if not w.startswith("weighted kappa")]
    if len(sample) < 100:
        calibration.warnings.append(f"{len(sample)} pairs give a wide interval: 100 or more are needed for a verdict "
                                    "that can be trusted.")
    return calibration


def _reference(sample: Sequence[CalibrationPair]) -> Qrels:
    """The sample's labels as qrels."""
    reference: Qrels = {}
    for pair in sample:
        reference.setdefault(pair.query_id, {})[pair.doc_id] = pair.label
    return reference


def _write_sample(sample: Sequence[CalibrationPair], path: Path) -> None:
    """The sample as a pool file (query_id, doc_ids) with each pair's label beside it."""
    rows: dict[str, dict[str, Any]] = {}
    for pair in sample:
        row = rows.setdefault(pair.query_id, {"query_id": pair.query_id, "doc_ids": [], "labels": {}})
        row["doc_ids"].append(pair.doc_id)
        row["labels"][pair.doc_id] = pair.label
    write_jsonl_atomic(path, list(rows.values()))


def _grades_on(grades: Qrels, reference: Qrels) -> Qrels:
    """The judge's grades of the pairs in `reference` (the file may hold more)."""
    return {query_id: kept for query_id, found in grades.items()
            if (kept := {doc: grade for doc, grade in found.items() if doc in reference.get(query_id, {})})}


def write_calibration_json(calibration: Calibration, path: str | Path) -> None:
    from recall_kit.fileio import write_json_atomic

    write_json_atomic(path, calibration.to_dict())
