"""The study result gathered from the steps' artefacts: the evidence, then the rules and the threats.

Each summary is a function of a dataset and results (so a test can plant either); the document
step's `collect` (study/steps/document.py) reads the study folder and puts them together.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recall_kit.study.result import (
    AblationSummary,
    AblationVariant,
    AgreementSummary,
    HeadToHead,
    LegReach,
    StratumSummary,
    SweepSummary,
    SystemSummary,
)
from recall_kit.study.steps.agreement import AgreementOutput
from recall_kit.study.steps.common import Skipped, read_output
from recall_kit.study.steps.evaluation_set import SensitiveDropped, Strata
from recall_kit.study.steps.judgments import JudgmentsOutput

if TYPE_CHECKING:
    from recall_kit.dataset import Dataset
    from recall_kit.decide.compare import SavedComparison
    from recall_kit.measure.result import BenchmarkResult
    from recall_kit.study.pipeline.declare import Artefacts

#: z(1 - 0.05 / 2) + z(0.8): the minimum detectable delta of a paired test is this many standard
#: errors of the mean paired difference (two-sided alpha 0.05, power 0.8).
DETECTABLE_Z = 1.959964 + 0.841621

#: Exact strata: lint's kinds that break "the phrase occurs in exactly its judged memories".
EXACT_RULE_BROKEN = ("exact_not_unique", "exact_not_found")


def relevant(dataset: Dataset, query_id: str) -> set[str]:
    return {doc for doc, grade in dataset.qrels.get(query_id, {}).items() if grade >= 1}


def minimum_detectable(baseline: Sequence[float], challenger: Sequence[float]) -> float:
    """The smallest mean paired difference a two-sided test (alpha 0.05, power 0.8) would detect
    at this many queries, from the spread of the observed paired differences (their standard
    deviation; where every difference is 0, that of the baseline's values times sqrt 2, as for
    independent values)."""
    n = len(baseline)
    if n < 2:  # (math.inf: no variation to measure it from, or too few queries)
        return math.inf
    diffs = [b - a for a, b in zip(baseline, challenger, strict=True)]

    def sd(values: Sequence[float]) -> float:
        mean = sum(values) / len(values)
        return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))

    spread = sd(diffs) or math.sqrt(2) * sd(baseline)
    return DETECTABLE_Z * spread / math.sqrt(n) if spread else math.inf


def smallest_p(n: int, resamples: int) -> float:
    """The smallest two-sided p a paired randomisation test gives on n queries: 2 / 2^n sign
    assignments are as extreme as the observed (itself and its mirror), and with fewer resamples
    than assignments p is never below 1 / (resamples + 1)."""
    return max(2.0 ** (1 - n), 1.0 / (resamples + 1))


def detectable_z(alpha: float) -> float:
    """z(1 - alpha / 2) + z(0.8): standard errors a two-sided test at `alpha` needs for power 0.8."""
    from statistics import NormalDist

    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(0.8)


def saturation(results: Mapping[str, BenchmarkResult], decision: Sequence[str]) -> dict[str, list[str]]:
    """Stratum -> the decision metrics on which every system's mean is the ceiling (1)."""
    strata = {s for result in results.values() for s in result.strata}
    return {stratum: [m for m in decision if all(r.mean(m, stratum) >= 1 - 1e-9 for r in results.values())]
            for stratum in sorted(strata)}


def mark_reach(strata: Sequence[StratumSummary], family_rows: int, resamples: int, alpha: float = 0.05) -> None:
    """Per stratum: the smallest p its size allows, whether any effect there can pass Holm's first
    step in its family, and the smallest delta detectable at the family's corrected level."""
    factor = detectable_z(alpha / max(family_rows, 1)) / DETECTABLE_Z
    for stratum in strata:
        stratum.smallest_p = round(smallest_p(stratum.queries, resamples), 6)
        stratum.family_rows = family_rows
        stratum.reachable = family_rows * smallest_p(stratum.queries, resamples) < alpha
        stratum.minimum_detectable_in_family = {
            metric: None if value is None else round(value * factor, 4)
            for metric, value in stratum.minimum_detectable.items()}


def stratum_summaries(dataset: Dataset, baseline: BenchmarkResult, challenger: BenchmarkResult | None,
                      decision: Sequence[str], built: Strata,
                      lint_findings: Sequence[Mapping[str, Any]]) -> list[StratumSummary]:
    """Per stratum: size, construction, label shape, lint counts and the minimum detectable deltas."""
    by_stratum: dict[str, list[str]] = {}
    for query in dataset.queries:
        by_stratum.setdefault(query.stratum, []).append(query.query_id)
    out = []
    for stratum, ids in by_stratum.items():
        lint = Counter(str(f["kind"]) for f in lint_findings if f.get("stratum") == stratum)
        how = built.get(stratum)
        exact_rule = stratum.startswith("exact") and not any(lint[kind] for kind in EXACT_RULE_BROKEN)
        mde = {}
        for metric in decision:
            base = baseline.per_query(metric)
            other = (challenger or baseline).per_query(metric)
            value = minimum_detectable([base[q] for q in ids], [other[q] for q in ids])
            mde[metric] = round(value, 4) if math.isfinite(value) else None
        out.append(StratumSummary(
            name=stratum, queries=len(ids), built=how.built if how else "supplied by the user",
            corpus_rule=(how is not None and how.generated) or exact_rule,
            one_relevant_share=round(sum(1 for q in ids if len(relevant(dataset, q)) == 1) / len(ids), 4),
            graded_share=round(sum(1 for q in ids if any(g > 1 for g in dataset.qrels.get(q, {}).values()))
                               / len(ids), 4),
            minimum_detectable=mde, lint=dict(sorted(lint.items())),
        ))
    return out


def leg_reach(result: BenchmarkResult, hook_k: int, saturated: Collection[str] = ()) -> list[LegReach]:
    """For each leg of a fused system: in how many queries an id that only it found sits in the fused
    top k (queries of `saturated` strata left out: every system is at the ceiling there)."""
    legs = result.system.legs
    queries = [query for query in result.queries if query.stratum not in saturated]
    if len(legs) < 2 or not queries:
        return []
    reached = Counter[str]()
    for query in queries:
        solo = {next(iter(found)) for doc in query.ranking[:hook_k]
                if len(found := query.found_by.get(doc, {})) == 1}
        reached.update(solo)
    return [LegReach(leg=leg.name, weight=leg.weight, queries_reached=reached[leg.name], queries=len(queries))
            for leg in legs]


def system_summary(name: str, result: BenchmarkResult, dataset: Dataset, hook_k: int,
                   saturated: Collection[str] = (), labelled: Mapping[str, Mapping[str, int]] | None = None) -> SystemSummary:
    """One system's means, holes at the hook's k (the ids no label judges: `labelled`, else the
    dataset's qrels; a model's grade is not a label), first-hit shares, leg reach, latency and storage."""
    rankings = result.rankings()
    returned = [(q, doc) for q, ranking in rankings.items() for doc in ranking[:hook_k]]
    judged = dataset.qrels if labelled is None else labelled
    unjudged = sum(1 for q, doc in returned if doc not in judged.get(q, {}))
    first: dict[str, list[bool]] = {}
    for query in result.queries:
        rel = relevant(dataset, query.query_id)
        if len(rel) == 1:
            first.setdefault(query.stratum, []).append(bool(query.ranking) and query.ranking[0] in rel)
    means = {"overall": dict(result.means())} | {s: dict(result.means(s)) for s in result.strata}
    models = {leg.name: str(leg.options["model"]) for leg in result.system.legs if leg.options.get("model")}
    latency = result.latency
    return SystemSummary(
        name=name, retriever=result.system.spec or "", legs=[leg.name for leg in result.system.legs],
        fusions=[step.name for step in result.system.fusion], models=models, means=means,
        unjudged_share=round(unjudged / len(returned), 4) if returned else 0.0,
        first_hit_share={s: round(sum(v) / len(v), 4) for s, v in sorted(first.items())},
        reach=leg_reach(result, hook_k, saturated),
        latency_p50_ms=latency.stat("p50") if latency.measured else None,
        latency_p95_ms=latency.stat("p95") if latency.measured else None,
        index_bytes=result.index.size_bytes, build_seconds=result.index.build_seconds,
    )


def head_to_head(comparison: SavedComparison, baseline: str) -> list[HeadToHead]:
    """The comparison's decision rows (every candidate, every scope): one Holm family."""
    return [HeadToHead.of(row, comparison.rows) for row in comparison.decision_rows() if row.system != baseline]


def ablation_summary(graph: Artefacts, hook_k: int, decision: Sequence[str],
                     saturated: Collection[str] = ()) -> AblationSummary:
    """The ablation's variants (means, deltas against the full system) and the full system's leg reach."""
    from recall_kit.decide.ablate import SavedAblation
    from recall_kit.measure.result import load_result

    folder = graph.path("ablation")
    if (folder / "skipped.json").exists():
        return AblationSummary(skipped=read_output(Skipped, folder / "skipped.json").why)
    saved = SavedAblation.load(folder / "ablation" / "ablation.json")
    full = load_result(folder / "ablation" / str(saved.variants[0].file))
    return AblationSummary(
        system=saved.full,
        variants=[AblationVariant(v.name, v.kind, v.legs, {m: v.means[m] for m in decision if m in v.means})
                  for v in saved.variants],
        rows=[HeadToHead.of(row, saved.comparison.rows) for row in saved.comparison.decision_rows("overall")],
        reach=leg_reach(full, hook_k, saturated))


def sweep_summary(graph: Artefacts, system: str) -> SweepSummary:
    """The sweep's choice: the grid, the split, the best setting and its held-out comparison."""
    from recall_kit.decide.sweep import SavedSweep

    folder = graph.path("sweep")
    if (folder / "skipped.json").exists():
        return SweepSummary(skipped=read_output(Skipped, folder / "skipped.json").why)
    saved = SavedSweep.load(folder / "sweep" / "sweep.json")
    held_out = ([HeadToHead.of(row, saved.comparison.rows) for row in saved.comparison.rows
                 if row.scope == "overall"]
                if saved.comparison else [])
    return SweepSummary(system=system, target=saved.target, guards=saved.guards, holdout=saved.holdout,
                        tuning_queries=saved.tuning_queries, test_queries=saved.test_queries,
                        settings=saved.settings, eligible=saved.eligible, best_settings=saved.best_settings,
                        held_out=held_out)


def judge_measured(judgments: JudgmentsOutput) -> dict[str, Any]:
    """A learning judge's kappa on the labelled pairs it learnt from (judgments.json), as
    `LabelsSummary`'s fields; none for another judge."""
    measured = judgments.judge_measured or {}
    interval = measured.get("kappa_ci")
    return {"judge_kappa": measured.get("kappa"), "judge_kappa_ci": (interval[0], interval[1]) if interval else None,
            "judge_pairs": int(measured.get("n") or 0)}


def agreement_summary(data: AgreementOutput, threshold: float) -> AgreementSummary:
    """The agreement step's output as the study keeps it."""
    return AgreementSummary(measured=data.measured, kappa=data.kappa, n=data.n, kappa_ci=data.kappa_ci,
                            why=data.why or "", against=data.against or "", threshold=threshold)


def sensitive_labels(artefacts: Artefacts, judgments: JudgmentsOutput) -> dict[str, Any]:
    """How many labels named a sensitive memory and were dropped, per file: the user's qrels (the
    evaluation-set step's sensitive.json) and each person's grades (the judgments step's)."""
    listed = artefacts.path("evaluation-set") / "sensitive.json"
    own = read_output(SensitiveDropped, listed) if listed.is_file() else None
    dropped = {own.file: own.labels_dropped} if own and own.labels_dropped else {}
    dropped.update(judgments.people.sensitive_dropped if judgments.people else {})
    return {"sensitive_dropped": dropped, "sensitive_queries_dropped": own.queries_dropped if own else 0}


def unjudged_left(dataset: Dataset, results: Mapping[str, BenchmarkResult], depth: int) -> int:
    """How many distinct (query, id) pairs in some system's top `depth` the labels still do not judge."""
    left = {(query, doc) for result in results.values() for query, ranking in result.rankings().items()
            for doc in ranking[:depth] if doc not in dataset.qrels.get(query, {})}
    return len(left)
