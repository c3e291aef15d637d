"""The intervals step: a hole-aware (prediction-powered) interval for each candidate's decision
rows (the document shows the verdict's system's), the seeded sample of open queries a person labels
for them, and the power analysis.

The frame is fixed by the evaluation set's own labels (the user's qrels): a query is *open* when
some labelling of the unjudged ids in the two tops moves its delta. The step draws one seeded random
order of the open queries (`decide.ppi.draw_sample`); `recall-kit label` offers their holes first
(`sample_pairs`), and each row's interval uses the longest prefix of that order a person has fully
labelled (docs/labelling.md). The predictor is the model judge's probability of relevance where it
gives one (`combined`), else its grades where one ran (a grade of 1 or more: relevant), else every
hole not relevant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule, compare_reads, eval_steps, hashes, people_paths

if TYPE_CHECKING:
    from recall_kit.decide.holes import Contrast, Holes

FILE = "intervals.json"
NO_JUDGE = "holes not relevant"
#: How the predictor's name ends when it is a judge's probabilities (its grades otherwise).
BY_PROBABILITIES = "'s probabilities"


@dataclass(frozen=True)
class IntervalReads:
    """What the intervals step reads: the baseline and candidates, the decision metrics, the judge
    (its probabilities, else its grades, are the predictor), people's label files and their hashes, resamples and seed."""

    systems: list[str]
    decision: list[str]
    judge: str
    resamples: int
    seed: int
    people: dict[str, str | None] = field(default_factory=dict)
    #: The hook's k: a sample query's pairs are every system's unlabelled ids in its top k.
    hook_k: int = 5


def interval_reads(config: StudyConfig) -> IntervalReads:
    """The intervals step's reads: the head-to-head's systems, the decision metrics, the judge, people's files."""
    head = compare_reads(config)
    return IntervalReads(head.systems, list(config.decision_metrics), config.judge, config.resamples, config.seed,
                         people=hashes(people_paths(config)), hook_k=config.hook_k)


def _predictions(reads: IntervalReads, graph: Artefacts) -> tuple[dict[str, dict[str, float]], str]:
    """The predictor: the model judge's probability of relevance for each pair it graded where it
    gives one (`combined`), else its grade (1 or more: relevant); without a model judge, none."""
    from recall_kit.study.steps.judgments import PROBABILITIES, read_probabilities

    grades_path = graph.path("judgments") / "model-grades.jsonl"
    if reads.judge == "qrels" or not grades_path.is_file():
        return {}, NO_JUDGE
    from recall_kit.curate.judge import read_qrels_file

    grades = read_qrels_file(grades_path)
    found = {q: {str(d): float(g >= 1) for d, g in docs.items()} for q, docs in grades.items()}
    chances = graph.path("judgments") / PROBABILITIES
    if chances.is_file():
        for query, values in read_probabilities(chances).items():
            found.setdefault(query, {}).update(values)
        return found, f"the {reads.judge} judge{BY_PROBABILITIES}"
    return found, f"the {reads.judge} judge"


def make_intervals(reads: IntervalReads, graph: Artefacts, folder: Path) -> None:
    """intervals.json: the sample (query ids, then their (query, id) holes in order) and each row.

    Every candidate's decision rows against the baseline, so whichever system the verdict ends up
    about (the document picks it: `hole_evidence.attach_intervals`), its rows are here. The frame is the union of
    the candidates' open queries, drawn in one seeded order; a sample query's pairs are the holes of
    every system that can become the verdict (each system's unlabelled ids in its top k at the hook,
    and each contrast's holes), so a labelled prefix stays labelled whatever the labels favour; each
    contrast's labelled queries are a prefix of the same random order restricted to its open ones."""
    from recall_kit.dataset import load_dataset
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
    contrasts = decision_contrasts(reads.systems[0], reads.systems[1:], metrics, base.query_ids, base.stratum_of())
    rankings = {name: result.rankings() for name, result in results.items()}
    holes = Holes(rankings, dataset.qrels, contrasts, n_resamples=100, seed=reads.seed)
    people = people_grades(read_people([Path(p) for p in reads.people]))
    predictions, predictor = _predictions(reads, graph)
    sample, pairs = draw_sample(holes, reads.systems, reads.hook_k, reads.seed)
    rows = [interval_row(holes, contrast, sample, people, predictions, predictor, reads.resamples, reads.seed)
            for contrast in contrasts]
    write_json_atomic(folder / FILE, {"challenger": None, "predictor": predictor, "sample": sample,
                                      "pairs": [list(p) for p in pairs], "rows": rows})


RULE = StepRule("intervals", IntervalReads, lambda at, _: interval_reads(at.config), make_intervals,
                needs=lambda at: ["evaluation-set", "judgments", *eval_steps(at)])


def draw_sample(holes: Holes, systems: Sequence[str], hook_k: int, seed: int) -> tuple[list[str], list[tuple[str, str]]]:
    """The study's sample: a seeded random order of the queries open in any of `holes`' contrasts
    (`ppi.draw_sample`), and each one's pairs to label, in order: every contrast's holes, then
    every system's (of `systems`) unlabelled ids in its top `hook_k` (benchmarks/bench_holes.py
    draws with it too)."""
    from recall_kit.decide import ppi

    contrasts = holes.contrasts
    opened = {q for c in contrasts for q in c.query_ids if ppi.is_open(holes.table(c, q))}
    sample = ppi.draw_sample(sorted(opened), seed)
    pairs = []
    for query in sample:
        tops = [doc for name in systems for doc in list(holes.rankings[name].get(query, []))[:hook_k]]
        held = [doc for c in contrasts if query in c.query_ids for doc in holes.table(c, query).holes]
        pairs += [(query, doc) for doc in dict.fromkeys([*held, *tops])
                  if holes.qrels.get(query, {}).get(doc, -1) < 0]
    return sample, pairs


def interval_row(holes: Holes, contrast: Contrast, sample: Sequence[str], people: Mapping[str, Mapping[str, int]],
                 predictions: Mapping[str, Mapping[str, float]], predictor: str, resamples: int,
                 seed: int) -> dict[str, Any]:
    """One decision row: its interval (None: too few labelled queries) and the labels one would need
    that tells the delta as scored from 0 (width twice the delta), or, when the scored delta's own
    bootstrap interval is wider (it does not tell it from 0 either), one as narrow as that
    (benchmarks/bench_holes.py reads its intervals from it)."""
    import dataclasses

    from recall_kit.decide import ppi
    from recall_kit.decide.stats import paired_bootstrap

    tables = {q: holes.table(contrast, q) for q in contrast.query_ids}
    order = [q for q in sample if q in tables]
    found = ppi.interval(tables, order, people, predictions, predictor=predictor)
    scored = paired_bootstrap([t.baseline[0] for t in tables.values()], [t.candidate[0] for t in tables.values()],
                              n_resamples=resamples, seed=seed)
    target = "zero" if 2 * abs(scored.delta) >= scored.high - scored.low else "today"
    width = max(2 * abs(scored.delta), scored.high - scored.low, 1e-6)
    plan = ppi.plan_labels(tables, order, people, width, predictions)
    return {"candidate": contrast.candidate, "metric": contrast.metric, "scope": contrast.scope,
            "interval": None if found is None else found.to_dict(),
            "n": len(tables), "open": sum(1 for t in tables.values() if ppi.is_open(t)),
            "labelled": len(ppi.labelled_prefix(order, tables, people)),
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
