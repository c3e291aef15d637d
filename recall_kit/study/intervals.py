"""The intervals step: a hole-aware (prediction-powered) interval for each of the challenger's
decision rows, the seeded sample of open queries a person labels for it, and the power analysis.

The frame is fixed by the evaluation set's own labels (the user's qrels): a query is *open* when
some labelling of the unjudged ids in the two tops moves its delta. The step draws one seeded random
order of the open queries (`decide.ppi.draw_sample`); `recall-kit label` offers their holes first
(`sample_pairs`), and each row's interval uses the longest prefix of that order a person has fully
labelled (docs/labelling.md). The predictor is the model judge's grades where one ran (a grade of 1
or more: relevant), else every hole not relevant.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.study.reads import IntervalReads

if TYPE_CHECKING:
    from recall_kit.decide.holes import Contrast, Holes
    from recall_kit.measure.result import BenchmarkResult
    from recall_kit.study.pipeline.declare import Artefacts
    from recall_kit.study.result import HoleInterval, StudyResult
    from recall_kit.types import ReportTable

FILE = "intervals.json"
NO_JUDGE = "holes not relevant"


def _challenger(reads: IntervalReads, results: dict[str, BenchmarkResult]) -> str:
    """The study's challenger: the candidate with the best mean on the first decision metric."""
    candidates = reads.systems[1:]
    return max(candidates, key=lambda name: (results[name].mean(reads.decision[0]), -candidates.index(name)))


def _predictions(reads: IntervalReads, graph: Artefacts) -> tuple[dict[str, dict[str, float]], str]:
    grades_path = graph.path("judgments") / "model-grades.jsonl"
    if reads.judge == "qrels" or not grades_path.is_file():
        return {}, NO_JUDGE
    from recall_kit.curate.judge import read_qrels_file

    grades = read_qrels_file(grades_path)
    return {q: {str(d): float(g >= 1) for d, g in docs.items()} for q, docs in grades.items()}, f"the {reads.judge} judge"


def make_intervals(reads: IntervalReads, graph: Artefacts, folder: Path) -> None:
    """intervals.json: the sample (query ids, then their (query, id) holes in order) and each row."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide import ppi
    from recall_kit.decide.holes import Holes, boundable, decision_contrasts
    from recall_kit.fileio import write_json_atomic
    from recall_kit.measure.result import load_result
    from recall_kit.study.people import people_grades, read_people

    metrics = boundable(reads.decision)
    if len(reads.systems) < 2 or not metrics:
        write_json_atomic(folder / FILE, {"sample": [], "pairs": [], "predictor": NO_JUDGE, "rows": []})
        return
    dataset = load_dataset(graph.path("evaluation-set"))
    results = {name: load_result(graph.path(f"eval/{name}") / "result.json") for name in reads.systems}
    base = results[reads.systems[0]]
    challenger = _challenger(reads, results)
    contrasts = decision_contrasts(reads.systems[0], [challenger], metrics, base.query_ids, base.stratum_of())
    holes = Holes({name: results[name].rankings() for name in (reads.systems[0], challenger)}, dataset.qrels,
                  contrasts, n_resamples=100, seed=reads.seed)
    people = people_grades(read_people([Path(p) for p in reads.people]))
    predictions, predictor = _predictions(reads, graph)
    opened = {q for c in contrasts for q in c.query_ids if ppi.is_open(holes.table(c, q))}
    sample = ppi.draw_sample(sorted(opened), reads.seed)
    pairs = list(dict.fromkeys((q, d) for q in sample for c in contrasts if q in c.query_ids
                               for d in holes.table(c, q).holes))
    rows = [_row(holes, contrast, sample, people, predictions, predictor, reads) for contrast in contrasts]
    write_json_atomic(folder / FILE, {"challenger": challenger, "predictor": predictor, "sample": sample,
                                      "pairs": [list(p) for p in pairs], "rows": rows})


def _row(holes: Holes, contrast: Contrast, sample: list[str], people: dict[str, dict[str, int]],
         predictions: dict[str, dict[str, float]], predictor: str, reads: IntervalReads) -> dict[str, Any]:
    """One decision row: its interval (None: too few labelled queries) and the labels one would need
    that tells the delta as scored from 0 (width twice the delta), or, when the scored delta's own
    bootstrap interval is wider (it does not tell it from 0 either), one as narrow as that."""
    import dataclasses

    from recall_kit.decide import ppi
    from recall_kit.decide.stats import paired_bootstrap

    tables = {q: holes.table(contrast, q) for q in contrast.query_ids}
    order = [q for q in sample if q in tables]
    found = ppi.interval(tables, order, people, predictions, predictor=predictor)
    scored = paired_bootstrap([t.baseline[0] for t in tables.values()], [t.candidate[0] for t in tables.values()],
                              n_resamples=reads.resamples, seed=reads.seed)
    target = "zero" if 2 * abs(scored.delta) >= scored.high - scored.low else "today"
    width = max(2 * abs(scored.delta), scored.high - scored.low, 1e-6)
    plan = ppi.plan_labels(tables, order, people, width, predictions)
    return {"candidate": contrast.candidate, "metric": contrast.metric, "scope": contrast.scope,
            "interval": None if found is None else found.to_dict(),
            "n": len(tables), "open": sum(1 for t in tables.values() if ppi.is_open(t)),
            "labelled": len(ppi.labelled_prefix([q for q in order if ppi.is_open(tables[q])], tables, people)),
            "plan": dataclasses.asdict(plan), "plan_target": target}


def sample_pairs(folder: str | Path) -> list[tuple[str, str]]:
    """The (query, id) holes of the study's sample of open queries, in the order to label them
    (empty before the intervals step ran)."""
    import json

    from recall_kit.errors import DatasetError

    path = Path(folder) / "steps" / "intervals" / FILE
    if not path.is_file():
        return []
    try:
        return [(str(q), str(d)) for q, d in json.loads(path.read_text(encoding="utf-8")).get("pairs", [])]
    except (ValueError, TypeError, AttributeError, RecursionError):  # not JSON, not pairs, too deep
        raise DatasetError(f"{path}: not as the study's intervals step writes it; run the study again.") from None


# -- what the document says -----------------------------------------------------------------------


def attach_intervals(study: StudyResult, graph: Artefacts) -> None:
    """Put the intervals step's evidence on the study result (`study.intervals`)."""
    import json

    from recall_kit.study.result import HoleIntervals

    path = graph.path("intervals") / FILE
    if not path.is_file():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    study.intervals = HoleIntervals.from_dict(data, str(path))


def _overall(study: StudyResult) -> list[HoleInterval]:
    found = study.intervals
    return [] if found is None else [row for row in found.rows if row.scope == "overall"]


def interval_line(study: StudyResult) -> str | None:
    """The bottom line's sentence on the holes: the hole-aware interval of each overall decision row
    once people labelled enough of the sample, else what the printed intervals assume and how many
    labels would give one that does not. None when no row has a hole that can move it."""
    found, rows = study.intervals, _overall(study)
    if found is None or not rows or all(row.open == 0 for row in rows):
        return None
    predictor = found.predictor
    labelled = [(row.metric, row.interval) for row in rows if row.interval is not None]
    if labelled:
        first = labelled[0][1]
        parts = [f"{metric} {iv.delta:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}]" + (" (includes 0)" if iv.low <= 0 <= iv.high else "")
                 for metric, iv in labelled]
        return (f"Hole-aware interval ({found.challenger} against {study.baseline}, prediction-powered: "
                f"people's labels on {first.labelled} of the {first.open} open queries drawn at random, "
                f"{first.labels} labels; predictor: {predictor}): " + "; ".join(parts) + ".")
    need = max(rows, key=lambda row: row.plan.labels)
    how = (f"labelling every open query's holes ({need.plan.labels:,} labels)" if need.plan.everything else
           f"about {need.plan.labels:,} labels ({need.plan.queries} queries of the seeded sample)")
    goal = ("narrow enough to tell the delta as scored from 0, if it holds" if need.plan_target == "zero"
            else "as narrow as the printed one")
    assumed = ("every unjudged hit is not relevant" if predictor == NO_JUDGE else
               f"{predictor}'s grades of the unjudged hits are right")
    return (f"These intervals assume {assumed} ({need.open} of {need.n} queries have a hole in the"
            f" store's own labels that can move their {need.metric} delta). A prediction-powered interval "
            f"that does not, {goal} (width {need.plan.width:.3f}), needs {how} (ppi-python's power "
            f"analysis; `recall-kit label` offers the sample first).")


def intervals_table(study: StudyResult) -> ReportTable | None:
    """The document's table: each of the challenger's decision rows with its hole-aware interval."""
    from recall_kit.decide.ppi import MIN_LABELLED
    from recall_kit.types import ReportTable

    found = study.intervals
    if found is None or not found.rows:
        return None
    rows = []
    for row in found.rows:
        iv = row.interval
        rows.append([row.scope, row.metric, row.open, row.labelled,
                     "" if iv is None else f"{iv.delta:+.4f}",
                     f"not yet (fewer than {MIN_LABELLED} labelled)" if iv is None else f"[{iv.low:+.4f}, {iv.high:+.4f}]",
                     "" if iv is None else iv.method, "" if iv is None else iv.labels,
                     "all" if row.plan.everything else f"{row.plan.labels:,} ({row.plan.queries})"])
    return ReportTable(
        "Hole-aware intervals",
        ["scope", "metric", "open queries", "labelled", "delta", "95% interval", "method", "labels",
         "labels (queries) for the planned width"],
        rows,
        [f"{found.challenger} against {study.baseline}. Prediction-powered inference (ppi-python, PPI++): a "
         f"person's labels on a seeded random sample of the open queries (a label can move their delta; the others "
         f"count exactly), the predictor ({found.predictor}) on the rest. Valid whatever the predictor's errors; "
         f"the sample's first queries: {', '.join(found.sample[:5])}{' ...' if len(found.sample) > 5 else ''}."])
