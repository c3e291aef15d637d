"""What a run's numbers need beside them: which leg found what, and the warnings.

Leg attribution (relevant ids each leg placed in the fused top k, alone or pushed out), a leg
that alone beats the fusion, legs that returned nothing or failed, and how much of the top
ranks the qrels judge. `recall_kit.measure.run.runner` runs the legs and calls these.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from recall_kit.dataset import Dataset
from recall_kit.measure.result_sections import LegAttribution
from recall_kit.measure.score.join import judge_rankings
from recall_kit.measure.systems.system import System
from recall_kit.types import Hit, JudgedRankings, Query

if TYPE_CHECKING:
    from recall_kit.measure.run.runs import FusedRun, LegRun


def relevant_ids(dataset: Dataset, query_id: str, relevance_level: int = 1) -> set[str]:
    """The ids a query's qrels call relevant at `relevance_level` (trec_eval ``-l``): grade >= it."""
    return {doc for doc, grade in dataset.qrels[query_id].items() if grade >= relevance_level}


def _attribution(
    leg_names: list[str],
    found_by: list[dict[str, dict[str, int]]],
    rankings: list[list[str]],
    relevant: list[set[str]],
    weights: dict[str, float],
    k: int,
) -> tuple[dict[str, LegAttribution], list[str]]:
    """Per leg: relevant ids in the fused top k it found, found only by it, and pushed out.

    Everything is measured at the scored depth k: a leg "found" a document when it ranked it in
    its own top k, however deep the legs were asked to search for fusion. Uniqueness at the
    fusion depth would credit no leg whenever every leg reaches most of a small corpus.
    """
    in_top: Counter[str] = Counter()
    only_this: Counter[str] = Counter()
    pushed_out: Counter[str] = Counter()
    unique: Counter[str] = Counter()
    # Documents in a leg's own top k that no other leg had in its top k, wherever fusion put them.
    own_unique: Counter[str] = Counter()
    for ranking, found, rel in zip(rankings, found_by, relevant, strict=True):
        for ranks in found.values():
            finders = [name for name, rank in ranks.items() if rank <= k]
            if len(finders) == 1:
                own_unique[finders[0]] += 1
        top = set(ranking[:k])
        for doc in top:
            legs_here = [name for name, rank in found.get(doc, {}).items() if rank <= k]
            for name in legs_here:
                if doc in rel:
                    in_top[name] += 1
            if len(legs_here) == 1:
                only = legs_here[0]
                unique[only] += 1
                if doc in rel:
                    only_this[only] += 1
        for doc in rel - top:
            for name, rank in found.get(doc, {}).items():
                if rank <= k:
                    pushed_out[name] += 1
    table = {name: LegAttribution(relevant_in_top_k=in_top[name], relevant_only_this_leg=only_this[name],
                                  relevant_pushed_out=pushed_out[name], unique_in_top_k=unique[name])
             for name in leg_names}
    warnings = []
    if len(leg_names) > 1:
        for name in leg_names:
            if weights.get(name, 1.0) <= 0 or table[name].unique_in_top_k > 0:
                continue
            if own_unique[name] == 0:
                # Nothing for the fusion to bar: its top k held only what other legs found too
                # (two identical legs, or one that returns a subset of another's).
                warnings.append(
                    f"Leg {name!r} found no document in its own top {k} that another leg did not also "
                    f"find in theirs: it adds no document of its own here, whatever the fusion."
                )
            else:
                warnings.append(
                    f"Leg {name!r} never placed a document that only it found (in its own top {k}) "
                    f"in any fused top {k}: check its weight and the fusion settings before "
                    "concluding it adds nothing."
                )
    return table, warnings


def weaker_than_a_leg(
    system: System, leg_hits: dict[str, list[list[Hit]]], query_ids: list[str], dataset: Dataset,
    specs: Sequence[Any], fused: dict[str, np.ndarray], k: int, *,
    relevance_level: int = 1, judged_only: bool = False,
) -> list[str]:
    """A warning for each leg that, alone, beats the fused ranking on the first metric (each
    scored as the fused ranking is: same k, relevance level and judged-only setting).

    Fusion is not free: a weak leg's top ranks can push out what a strong leg ranked well
    (rank-based fusion such as rrf gives rank 1 of every leg the same credit, whatever the leg's
    quality). The fix is data-dependent, so the warning names the numbers and the options.
    `leg_hits` holds each leg's hits per query, at the level scored (parents where the corpus has
    chunks).
    """
    if not specs:
        return []
    spec = specs[0]
    fused_mean = float(np.mean(fused[spec.name])) if len(query_ids) else 0.0
    warnings = []
    for name, hits in leg_hits.items():
        judged = judge_rankings(query_ids, [[hit.id for hit in query_hits[:k]] for query_hits in hits],
                                dataset.qrels, depth=k, relevance_level=relevance_level,
                                judged_only=judged_only)
        alone = float(np.mean(spec.compute(judged))) if len(query_ids) else 0.0
        if alone > fused_mean + 1e-12:
            first = system.fusion_names[0] if system.fusion_names else "fusion"
            advice = ("rrf credits every leg's top ranks alike, however weak the leg; try --fusion convex "
                      "(min-max), " if first == "rrf" else "try ")
            warnings.append(
                f"Leg {name!r} alone scores {spec.name} {alone:.4f}, above the fused {fused_mean:.4f} "
                f"({first}): the other legs drag it down here. {advice}"
                "a lower weight for the weaker leg, or dropping it (choose with 'recall-kit sweep --holdout')."
            )
    return warnings


#: `weaker_than_a_leg`'s sentence, read back by `merge_leg_warnings`.
_LEG_WARNING = re.compile(r"^Leg (?P<leg>'.*?') alone scores (?P<metric>\S+) (?P<alone>\S+), above the fused "
                          r"(?P<fused>[0-9.]+) \((?P<fusion>[^)]*)\): (?P<rest>.*)$")


def merge_leg_warnings(named: Sequence[tuple[str, str]]) -> list[str]:
    """Several systems' warnings (an ablation's variants), each said once: a warning one system
    gave is `SYSTEM: warning`; the same warning from several (a leg's own empty rankings, in every
    variant holding it) names them after it; a leg that alone beats the fused ranking of several
    systems is one warning naming each system's fused score."""
    said: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for system, warning in named:
        match = _LEG_WARNING.match(warning)
        key: tuple[str, ...] = ((match["leg"], match["metric"], match["alone"], match["fusion"], match["rest"])
                                if match else (warning,))
        said.setdefault(key, []).append((system, match["fused"] if match else ""))
    lines = []
    for key, systems in said.items():
        if len(systems) == 1:
            system, fused = systems[0]
            lines.append(f"{system}: " + (key[0] if len(key) == 1 else
                                          f"Leg {key[0]} alone scores {key[1]} {key[2]}, above the fused {fused} "
                                          f"({key[3]}): {key[4]}"))
        elif len(key) == 1:
            lines.append(f"{key[0]} ({', '.join(system for system, _ in systems)})")
        else:
            leg, metric, alone, fusion, rest = key
            fused = ", ".join(f"{system} {score}" for system, score in systems)
            lines.append(f"Leg {leg} alone scores {metric} {alone}, above every fused system holding it "
                         f"({fused}; {fusion}): {rest}")
    return lines


#: A leg that returns nothing for at least this share of the queries gets a warning.
EMPTY_RANKINGS_WARNING_SHARE = 0.1


def empty_rankings(leg_runs: dict[str, LegRun]) -> tuple[dict[str, int], list[str]]:
    """Per leg, how many queries it answered with no hits; a warning for each leg that did so
    for a large share (a broken index or query syntax scores 0 silently otherwise)."""
    counts = {name: sum(1 for hits in run.hits if not hits) for name, run in leg_runs.items()}
    warnings = []
    for name, run in leg_runs.items():
        total = len(run.hits)
        if total and counts[name] / total >= EMPTY_RANKINGS_WARNING_SHARE:
            warnings.append(
                f"Leg {name!r} returned no hits for {counts[name]} of {total} queries "
                f"({counts[name] / total:.0%}): those queries score 0 through it; check its index "
                "and query handling before reading its numbers."
                + (f" Hint: {run.empty_hint}." if run.empty_hint and counts[name] == total else "")
            )
    return counts, warnings


#: How many failed queries a warning names before it says "and N more".
FAILED_QUERIES_NAMED = 10


def failed_queries(leg_runs: dict[str, LegRun], queries: Sequence[Query]) -> list[str]:
    """A warning for each leg with queries whose search failed (a `FailedSearch`): how many, and
    which, with the retriever's reason. They were scored as empty rankings, never dropped."""
    warnings = []
    for name, run in leg_runs.items():
        if not run.failures:
            continue
        named = [f"{queries[index].query_id} ({reason})" for index, reason in sorted(run.failures.items())]
        more = len(named) - FAILED_QUERIES_NAMED
        listed = "; ".join(named[:FAILED_QUERIES_NAMED]) + (f"; and {more} more" if more > 0 else "")
        warnings.append(
            f"Leg {name!r} failed on {len(run.failures)} of {len(run.hits)} queries, scored as empty "
            f"rankings: {listed}."
        )
    return warnings


def judged_coverage(judged: JudgedRankings, judged_counts: Sequence[int], depth: int) -> float | None:
    """Mean, over queries with a ranking, of judged ids in the top `depth` divided by the most that
    could be judged there (min(depth, ranking length, judged ids in the qrels)).

    A perfect system scores 1 however sparse the qrels are; a low value means the top ranks hold
    ids nobody judged, so the metrics may under-count this system's hits.
    """
    shares = []
    for row, count in enumerate(judged_counts):
        top = min(depth, int(judged.lengths[row]))
        attainable = min(top, count)
        if attainable > 0:
            shares.append(min(1.0, float(judged.judged[row, :top].sum()) / attainable))
    return float(np.mean(shares)) if shares else None


def diagnose(
    system: System, dataset: Dataset, fused: FusedRun, judged: JudgedRankings, k: int,
    relevance_level: int = 1,
) -> tuple[dict[str, LegAttribution], list[str]]:
    """What each leg contributed, and every warning a reader of the result must see.

    A document is relevant, for the attribution as for the binary metrics, when its grade is at
    least `relevance_level` (trec_eval ``-l``)."""
    query_ids = [query.query_id for query in dataset.queries]
    ids = [[hit.id for hit in ranking] for ranking in fused.rankings]
    relevant_sets = [relevant_ids(dataset, q, relevance_level) for q in query_ids]
    attribution, warnings = _attribution([leg.name for leg in system.legs], fused.found_by, ids,
                                         relevant_sets, system.weights, k)
    for fusion in system.fusions:
        warnings.extend(fusion.diagnose(system.weights, k))
    warnings.extend(dataset.warnings)
    coverage = judged_coverage(judged, [len(dataset.qrels[q]) for q in query_ids], min(k, 10))
    if coverage is not None and coverage < 0.5:
        warnings.append(
            f"Only {coverage:.0%} of the top-{min(k, 10)} slots that judged ids could fill hold judged ids: "
            "the qrels may under-count this system's hits; pool and judge them ('recall-kit pool')."
        )
    return attribution, warnings
