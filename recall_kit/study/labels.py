"""People's labels in the study: their files (`recall-kit label`'s), merged into the judged set;
agreement between them and with a model judge; and the bounds of every decision row (what the
pairs still unjudged could do to each verdict), for the document and the holes threat.
"""

from __future__ import annotations

import glob
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.errors import SpecError

if TYPE_CHECKING:
    from recall_kit.study.config import StudyConfig
    from recall_kit.study.declare import Artefacts

Grades = dict[str, dict[str, int]]


def people_files(config: StudyConfig) -> list[Path]:
    """The grade files of `[judging] people` (globs allowed), else every FOLDER/labels/*.jsonl."""
    patterns = config.people if config.people is not None else [str(config.folder / "labels" / "*.jsonl")]
    found: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for match in matches:
            path = Path(match)
            if not path.is_file():
                raise SpecError(f"{config.source.name}: [judging] people names {match}, which is not a file.")
            if path not in found:
                found.append(path)
    return found


def read_people(paths: Sequence[Path]) -> dict[str, Grades]:
    """Assessor -> their grades, each file read as `recall-kit label` writes it."""
    from recall_kit.curate.assessor import AssessorFile

    out: dict[str, Grades] = {}
    for path in paths:
        assessor = _assessor_of(path)
        out[assessor] = AssessorFile.open(path, assessor).grades
    return out


def _assessor_of(path: Path) -> str:
    """The assessor a file names on its first row (else its stem)."""
    import json

    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                try:
                    return str(json.loads(line).get("assessor") or path.stem)
                except (json.JSONDecodeError, AttributeError):
                    break
    return path.stem


def people_grades(people: Mapping[str, Grades]) -> Grades:
    """One grade per pair from several people: the most common grade, the lower one on a tie."""
    votes: dict[str, dict[str, Counter[int]]] = {}
    for grades in people.values():
        for query, judged in grades.items():
            for doc, grade in judged.items():
                votes.setdefault(query, {}).setdefault(doc, Counter())[grade] += 1
    return {query: {doc: min(count, key=lambda g: (-count[g], g)) for doc, count in docs.items()}
            for query, docs in votes.items()}


def merge_labels(rows: Sequence[Mapping[str, Any]], *layers: Grades) -> tuple[list[dict[str, Any]], list[int]]:
    """qrels rows with each layer's grades added where nothing before it judged the pair (the user's
    qrels win, then each layer in turn); also how many grades each layer added."""
    merged: list[dict[str, Any]] = []
    added = [0] * len(layers)
    seen: set[str] = set()
    for row in rows:
        query = str(row["query_id"])
        seen.add(query)
        relevance = {str(k): int(v) for k, v in (row.get("relevance") or
                                                  {str(d): 1 for d in row.get("relevant_ids", [])}).items()}
        for index, layer in enumerate(layers):
            for doc, grade in layer.get(query, {}).items():
                if doc not in relevance:
                    relevance[doc] = grade
                    added[index] += 1
        merged.append({"query_id": row["query_id"], "relevance": relevance})
    return merged, added


def people_agreement(people: Mapping[str, Grades], model: Grades | None, seed: int = 0,
                     qrels: Grades | None = None) -> dict[str, Any]:
    """Cohen's kappa between every two assessors, of each against the model judge, and of each
    against the user's `qrels` (the pairs the label page mixed in as checks), on the pairs both
    graded; relevance binary (a grade of 1 or more), as the decisions read it."""
    from recall_kit.curate.agreement import agreement, paired_grades

    def measure(a: Grades, b: Grades) -> dict[str, Any] | None:
        first, second, _, _ = paired_grades(a, b, binary=True)
        if not first:
            return None
        agreed = sum(x == y for x, y in zip(first, second, strict=True))
        if len(set(first)) == 1 or len(set(second)) == 1:  # one side grades them all alike: kappa says nothing
            return {"kappa": None, "n": len(first), "interval": None, "agreed": agreed,
                    "why": "one side grades every shared pair alike"}
        found = agreement(a, b, binary=True, samples=500, seed=seed).to_dict()
        return {"kappa": found.get("kappa"), "n": found.get("n"), "interval": found.get("kappa_ci"), "agreed": agreed}

    names = sorted(people)
    pairs = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            found = measure(people[first], people[second])
            if found is not None:
                pairs.append({"a": first, "b": second, **found})
    against = []
    if model is not None:
        for name in names:
            found = measure(people[name], model)
            if found is not None:
                against.append({"assessor": name, **found})
    against_qrels = []
    if qrels is not None:
        for name in names:
            found = measure(people[name], qrels)
            if found is not None:
                against_qrels.append({"assessor": name, **found})
    return {"assessors": {name: sum(len(d) for d in people[name].values()) for name in names},
            "between": pairs, "against_model": against, "against_qrels": against_qrels}


# -- bounds ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundsReads:
    """What the bounds step reads: the head-to-head's systems (the baseline first) and the compare-down
    systems (the best candidate first), the decision metrics, resamples and seed."""

    systems: list[str]
    simpler: list[str]
    decision: list[str]
    resamples: int
    seed: int


def decision_bounds(reads: BoundsReads, artefacts: Artefacts) -> tuple[list[Any], list[Any]]:
    """The bounds of every decision row: each candidate against the baseline on each decision metric
    with a rank cutoff, overall and per stratum (one Holm family, as the comparison); and the best
    candidate against each simpler one, overall (their own family, as the compare-down step)."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.holes import Holes, boundable, decision_contrasts
    from recall_kit.measure.result import load_result

    dataset = load_dataset(artefacts.path("judgments") / "dataset")
    names = list(dict.fromkeys([*reads.systems, *reads.simpler]))
    results = {name: load_result(artefacts.path(f"eval/{name}") / "result.json") for name in names}
    base = results[reads.systems[0]]
    metrics = boundable(reads.decision)
    head = decision_contrasts(reads.systems[0], reads.systems[1:], metrics, base.query_ids, base.stratum_of())
    down = decision_contrasts(reads.simpler[0], reads.simpler[1:], metrics, base.query_ids,
                              dict.fromkeys(base.query_ids, ""), family="simpler") if reads.simpler else []
    if not head and not down:
        return [], []
    holes = Holes({name: result.rankings() for name, result in results.items()}, dataset.qrels, [*head, *down],
                  n_resamples=reads.resamples, seed=reads.seed)
    found = holes.bounds()
    return found[:len(head)], found[len(head):]


def make_bounds(reads: BoundsReads, artefacts: Artefacts, folder: Path) -> None:
    """The bounds step: bounds.json."""
    from recall_kit.fileio import write_json_atomic

    head, down = decision_bounds(reads, artefacts)
    write_json_atomic(folder / "bounds.json", {"rows": [b.to_dict() for b in head],
                                               "simpler": [b.to_dict() for b in down]})


# -- what the document says -----------------------------------------------------------------------


def attach_bounds(study: Any, found: Mapping[str, Any], people: Mapping[str, Any] | None,
                  agreement: Mapping[str, Any] | None) -> None:
    """Put the bounds step's rows on the study result: every row (`study.bounds`), each verdict's
    summary (`Verdict.bounds`) and each compare-down pair's (`SimplerComparison.bounds`); and the
    people's labels with their agreement (`study.people`)."""
    from recall_kit.decide.holes import PairedBounds
    from recall_kit.study.result import PeopleSummary

    study.bounds = [PairedBounds.from_dict(row) for row in found.get("rows", [])]
    down = [PairedBounds.from_dict(row) for row in found.get("simpler", [])]
    for verdict in study.verdicts:
        verdict.bounds = hole_bounds([b for b in study.bounds if b.candidate == verdict.system
                                      and b.scope == verdict.scope])
    if study.recommendation is not None:
        for pair in study.recommendation.comparisons:
            pair.bounds = hole_bounds([b for b in down if b.baseline == pair.best and b.candidate == pair.simpler])
            if pair.bounds is None and pair.simpler == study.baseline:  # the head-to-head's row, the other way round
                pair.bounds = hole_bounds([b for b in study.bounds if b.candidate == pair.best and b.scope == "overall"],
                                          sign=-1.0)
    agreement = agreement or {}
    if people or agreement:
        study.people = PeopleSummary(assessors=agreement.get("assessors", {}), added=(people or {}).get("added"),
                                     between=agreement.get("between", []),
                                     against_model=agreement.get("against_model", []),
                                     against_qrels=agreement.get("against_qrels", []))


def hole_bounds(rows: Sequence[Any], sign: float = 1.0) -> Any:
    """One verdict's (or pair's) `HoleBounds`: it can flip when any of its rows can; the deltas are its
    first decision metric's (times `sign`: -1 reads a row the other way round). None without rows."""
    from recall_kit.study.result import HoleBounds

    if not rows:
        return None
    first = rows[0]
    judged_only = (None if first.condensed_baseline is None or first.condensed_candidate is None
                   else first.condensed_candidate - first.condensed_baseline)
    return HoleBounds(can_flip=any(b.can_flip for b in rows), delta_if_all_relevant=sign * first.all_relevant,
                      delta_if_none_relevant=sign * first.delta,
                      judged_only_delta=None if judged_only is None else sign * judged_only)


def verdict_bounds(study: Any) -> list[tuple[Any, list[Any]]]:
    """Each verdict with the bounds of its decision rows (the challenger's, in its scope)."""
    return [(verdict, [b for b in study.bounds if b.candidate == verdict.system and b.scope == verdict.scope])
            for verdict in study.verdicts]


def flip_line(verdict: Any, rows: Sequence[Any]) -> str:
    """``overall (adopt): cannot flip; recall@5 +0.19 in [+0.12, +0.30] ...`` for one verdict."""
    from recall_kit.decide.holes_report import flip_words

    can = [b for b in rows if b.can_flip]
    head = f"can flip (on {', '.join(b.metric for b in can)})" if can else "cannot flip"
    parts = [f"{b.metric} {b.delta:+.4f}, {b.low:+.4f} to {b.high:+.4f} over the unjudged top-{_k(b.metric)} hits "
             f"({b.verdict_low} / {b.verdict_high} at the ends; {flip_words(b)})" for b in rows]
    return f"{verdict.scope} ({verdict.verdict}): {head}; " + "; ".join(parts)


def _k(metric: str) -> str:
    return metric.rsplit("@", 1)[-1] if "@" in metric else "k"


def bounds_table(study: Any) -> Any:
    """The document's table: each verdict, whether the unjudged pairs can flip it, and its rows' bounds."""
    from recall_kit.types import ReportTable

    pairs = verdict_bounds(study)
    if not study.bounds or not pairs:
        return None
    rows = []
    for verdict, bounds in pairs:
        for b in bounds:
            rows.append([verdict.scope, verdict.verdict, "can flip" if b.can_flip else "cannot flip", b.metric,
                         f"{b.delta:+.4f}", f"[{b.low:+.4f}, {b.high:+.4f}]", f"{b.all_relevant:+.4f}",
                         f"{b.verdict_low} / {b.verdict_high}", b.holes, b.movers,
                         _f(b.condensed_baseline), _f(b.condensed_candidate)])
    return ReportTable(
        "What the unjudged pairs can do to each verdict",
        ["scope", "verdict", "flip", "metric", "delta", "range over the unjudged", "all relevant",
         "row at low / high end", "unjudged pairs", "can move it", f"{study.baseline} judged only",
         "challenger judged only"],
        rows,
        ["Every unjudged id in either system's top k labelled relevant or not, in every way: 'range' is the lowest "
         "and highest delta, 'row at low / high end' the paired test's outcome there (Holm over the decision "
         "rows). A verdict cannot flip when each of its rows keeps its outcome at both ends. `recall-kit label` "
         "orders the pairs by how far each can move a verdict that can flip."])


def _f(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _kappa(found: Mapping[str, Any]) -> str:
    """``0.42 on 12 pairs (10 agreed)``, or why kappa says nothing there."""
    agreed = f", {found['agreed']} agreed" if found.get("agreed") is not None else ""
    if found.get("kappa") is None:
        return f"undefined on {found['n']} pairs ({found.get('why') or 'one grade only'}{agreed})"
    return f"{found['kappa']} on {found['n']} pairs" + (f" ({found['agreed']} agreed)" if agreed else "")


def people_line(study: Any) -> str | None:
    """Who labelled by hand, how many grades each gave, and their agreement (None: nobody)."""
    people = study.people
    if people is None or not people.assessors:
        return None
    counts = ", ".join(f"{name} {n} grades" for name, n in people.assessors.items())
    parts = [counts + (f"; {people.added} of their labels joined the judged set" if people.added is not None else "")]
    parts += [f"kappa {p['a']} / {p['b']} {_kappa(p)}" for p in people.between]
    parts += [f"kappa {p['assessor']} / the model judge {_kappa(p)}" for p in people.against_model]
    parts += [f"kappa {p['assessor']} / the user's qrels {_kappa(p)}" for p in people.against_qrels]
    if not people.between and len(people.assessors) > 1:
        parts.append("no pair graded by two assessors: agreement between them not measured")
    return "; ".join(parts)
