"""The recommendation, by rules written down (the document prints `RULES` beside the verdicts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from recall_kit.study.result import HeadToHead, Recommendation, SimplerComparison, StudyResult, SystemSummary, Verdict

if TYPE_CHECKING:
    from recall_kit.decide.compare import SavedComparison

#: The legs whose worth the bottom line states: what each buys over the best candidate without it.
COSTLY_LEGS = ("dense", "graph")

RULES = [
    "The challenger is the system the simplicity rule recommends, when that is a candidate; otherwise the "
    "candidate with the best mean on the first decision metric over all queries. Every candidate's decision "
    "rows (each decision metric, overall and per stratum) form one family, so choosing it after looking is "
    "paid for by Holm's correction.",
    "A delta counts when its Holm-adjusted paired randomisation p is below 0.05 (its 95% paired-bootstrap "
    "interval is shown beside it).",
    "adopt: at least one decision metric counts as better in that scope, and none counts as worse.",
    "do not adopt: any decision metric counts as worse in that scope.",
    "inconclusive: no decision metric counts either way; the smallest delta the scope could detect says "
    "how large an effect could still hide there.",
    "What it trades: the challenger's median single-query latency and index size against the baseline's, "
    "reported beside each verdict, never weighed into it.",
]


SIMPLICITY_RULES = [
    "Order of simplicity: the baseline first (it runs already), then fewer legs, then no dense or graph leg, "
    "then lower measured median latency, then a smaller index.",
    "The best candidate is compared with every simpler system on the decision metrics over all queries "
    "(paired bootstrap intervals, paired randomisation tests, Holm over those rows: one family).",
    "It earns its complexity over a simpler system when it is significantly better on at least one decision "
    "metric and significantly worse on none.",
    "With [study] margin = M: the simpler system is kept only when it is shown as good, i.e. the lower end of "
    "its interval against the best is above -M on every decision metric; otherwise the richer one stands.",
    "Recommended: the first system in the order of simplicity that the best candidate does not earn its "
    "complexity over; the best candidate when it earns it over every one.",
    "Provisional: a model judge's labels with judge agreement unmeasured, or a measured kappa below "
    "[judging] min_kappa, make every verdict provisional.",
]


def detectable(value: float | None) -> str:
    """A minimum detectable delta as the document prints it."""
    return "n/a (no variation at this size)" if value is None else f"{value:.3f}"


def at_ceiling(row: HeadToHead) -> bool:
    """Both systems of a row score the ceiling (1) on its metric: no delta can show there."""
    return row.baseline >= 1 - 1e-9 and row.value >= 1 - 1e-9


def _row(row: HeadToHead) -> str:
    if at_ceiling(row):
        return f"{row.metric}: cannot show a difference (both at the ceiling, 1.0000; n {row.n})"
    return (f"{row.metric} {row.delta:+.4f} [{row.ci_low:+.4f}, {row.ci_high:+.4f}] (95% CI, not Holm-adjusted), "
            f"{row.holm()}, n {row.n}")


def verdict_subject(study: StudyResult) -> str | None:
    """The system the verdicts are about: the recommended one when it is a candidate (so the bottom
    line's recommendation and its verdict name one system), else the best candidate (the challenger)."""
    recommendation = study.recommendation
    if recommendation is not None and recommendation.system != study.baseline:
        return recommendation.system
    return study.challenger


def stratum_hint(study: StudyResult, scope: str) -> str:
    """What an inconclusive stratum could have shown: saturated, out of reach in its family, or the
    smallest delta it could detect there."""
    stratum = study.stratum(scope)
    if stratum.saturated:
        return (f"; saturated: every system scores the ceiling on {', '.join(stratum.saturated)} here, "
                "so nothing can be gained on it")
    if not stratum.reachable:
        return (f"; no effect could reach significance here: at {stratum.queries} queries the smallest p is "
                f"{stratum.smallest_p:.4g}, times the family's {stratum.family_rows} rows "
                f"{(stratum.smallest_p or 0) * stratum.family_rows:.3g} >= 0.05")
    return "; the smallest delta this stratum could detect in its family: " + ", ".join(
        f"{metric} {detectable(value)}" for metric, value in stratum.minimum_detectable_in_family.items())


def trades(study: StudyResult, challenger: str) -> str:
    """Latency and storage of the challenger against the baseline, in words."""
    base, other = study.system(study.baseline), study.system(challenger)
    parts = []
    if base.latency_p50_ms and other.latency_p50_ms:
        parts.append(f"median latency {other.latency_p50_ms:.2f} ms against {base.latency_p50_ms:.2f} ms "
                     f"(x{other.latency_p50_ms / base.latency_p50_ms:.1f})")
    if base.index_bytes and other.index_bytes:
        parts.append(f"index {other.index_bytes:,} against {base.index_bytes:,} bytes "
                     f"(x{other.index_bytes / base.index_bytes:.1f})")
    return "; ".join(parts)


def recommend(study: StudyResult) -> list[Verdict]:
    """One verdict per scope (overall, then each stratum) for the challenger, by `RULES`."""
    challenger = verdict_subject(study)
    if challenger is None:
        return []
    scopes = ["overall", *(stratum.name for stratum in study.strata)]
    traded = trades(study, challenger)
    verdicts = []
    for scope in scopes:
        rows = [r for r in study.head_to_head if r.system == challenger and r.scope == scope]
        worse = [r for r in rows if r.significant and r.delta < 0]
        better = [r for r in rows if r.significant and r.delta > 0]
        if worse:
            verdict, because = "do not adopt", "worse on " + "; ".join(_row(r) for r in worse)
        elif better:
            verdict, because = "adopt", "better on " + "; ".join(_row(r) for r in better)
        elif rows and all(at_ceiling(r) for r in rows):
            verdict = "inconclusive"
            because = ("cannot show a difference: every system scores the ceiling on "
                       + ", ".join(r.metric for r in rows) + " here")
        else:
            hint = "" if scope == "overall" else stratum_hint(study, scope)
            verdict = "inconclusive"
            because = "no decision metric moved beyond noise (" + "; ".join(_row(r) for r in rows) + ")" + hint
        verdicts.append(Verdict(scope=scope, system=challenger, verdict=verdict, because=because, trades=traded,
                                provisional=bool(judge_holds_back(study))))
    return verdicts


def at_ceiling_everywhere(study: StudyResult) -> str | None:
    """The first decision metric when every system scores 1.000 on it over all queries (nothing
    can tell the systems apart there), else None."""
    metric = study.decision_metrics[0] if study.decision_metrics else None
    if metric is None or not study.systems:
        return None
    values = [system.means.get("overall", {}).get(metric) for system in study.systems]
    return metric if all(value is not None and value >= 1 - 1e-9 for value in values) else None


def judge_holds_back(study: StudyResult) -> str:
    """Why the judge's grades cannot yet be trusted (empty: they can, or no model judged): its
    agreement with a person never measured, or a measured kappa below `[judging] min_kappa` or
    undefined. Any reason makes every verdict provisional."""
    agreement, floor = study.agreement, study.agreement.threshold
    if study.labels.source == "qrels" and not agreement.measured:
        return ""
    if agreement.measured:
        if agreement.kappa is not None and agreement.kappa >= floor:
            return ""
        if agreement.kappa is None:
            return (f"judge agreement on {agreement.n} pairs ({agreement.against}) is undefined: one side graded every "
                    f"shared pair alike, and a kappa of at least {floor:g} ([judging] min_kappa) is needed")
        return (f"judge agreement kappa {agreement.kappa_words()} on {agreement.n} pairs ({agreement.against}) is "
                f"below {floor:g} ([judging] min_kappa)")
    return (f"the model judge {study.labels.source!r} graded the pool and its agreement was never measured against "
            "a person's grades (yours of the intervals' sample measure it: `recall-kit label` offers it first)")


def interval_verdict(intervals: Sequence[object]) -> str:
    """The verdict the hole-aware intervals of one scope's decision rows give by `RULES`: adopt when
    one excludes 0 above and none below, do not adopt when one excludes 0 below, else inconclusive."""
    if any(iv.high < 0 for iv in intervals):  # type: ignore[attr-defined]
        return "do not adopt"
    if any(iv.low > 0 for iv in intervals):  # type: ignore[attr-defined]
        return "adopt"
    return "inconclusive"


def holes_hold_back(study: StudyResult, verdict: Verdict) -> str:
    """Why the pairs no person labelled hold `verdict` back (empty: they do not): a decision row they
    can flip (a model's grade counts as no label) and no hole-aware interval that supports the verdict
    yet, with the labels that would give one."""
    rows = [b for b in study.bounds if b.candidate == verdict.system and b.scope == verdict.scope]
    flips = [b.metric for b in rows if b.can_flip]
    if not flips:
        return ""
    found = study.intervals
    mine = [] if found is None or found.challenger != verdict.system else [
        row for row in found.rows if row.scope == verdict.scope]
    intervals = [row.interval for row in mine if row.interval is not None]
    if mine and len(intervals) == len(mine):
        given = interval_verdict(intervals)
        if given == verdict.verdict:
            return ""
        need = max(mine, key=lambda row: row.plan.labels)
        return (f"{', '.join(flips)} can flip on the pairs no person labelled, and the hole-aware intervals say "
                f"{given!r}, not {verdict.verdict!r} (about {need.plan.labels:,} labels, {need.plan.queries} "
                "queries of the seeded sample, would narrow them to the planned width)")
    if mine:
        need = max(mine, key=lambda row: row.plan.labels)
        from recall_kit.decide.ppi import MIN_LABELLED

        done = min(row.labelled for row in mine)
        return (f"{', '.join(flips)} can flip on the pairs no person labelled, and no hole-aware interval yet "
                f"({done} of the {MIN_LABELLED} sample queries it needs labelled; about {need.plan.labels:,} labels, "
                f"{need.plan.queries} queries of the seeded sample, settle it: `recall-kit label` offers them first)")
    return f"{', '.join(flips)} can flip on the pairs no person labelled"


def mark_provisional(study: StudyResult) -> None:
    """Once the bounds and intervals are on the study: each verdict (and the recommendation) is
    provisional while the judge is unmeasured or below `[judging] min_kappa`, while a decision row
    the unlabelled pairs can flip has no hole-aware interval that supports it, or when every
    system is at the ceiling; `provisional_why` says which, and what would settle it."""
    judge = judge_holds_back(study)
    ceiling = at_ceiling_everywhere(study)
    for verdict in study.verdicts:
        reasons = [why for why in (judge, holes_hold_back(study, verdict)) if why]
        if ceiling and verdict.scope == "overall":
            reasons.insert(0, f"every system scores 1.000 on {ceiling}")
        verdict.provisional, verdict.provisional_why = bool(reasons), "; and ".join(reasons)
    recommendation = study.recommendation
    if recommendation is not None:
        overall = next((v for v in study.verdicts if v.scope == "overall"), None)
        why = overall.provisional_why if overall is not None else judge
        recommendation.provisional, recommendation.provisional_why = bool(why), why


def simplicity_key(system: SystemSummary, baseline: str) -> tuple[float, ...]:
    """Where `system` stands in the order of simplicity (`SIMPLICITY_RULES`' first rule)."""
    costly = sum(1 for leg in system.legs if leg_kind(leg) in COSTLY_LEGS)
    return (system.name != baseline, len(system.legs), costly,
            system.latency_p50_ms if system.latency_p50_ms is not None else float("inf"),
            system.index_bytes if system.index_bytes is not None else float("inf"))


def leg_kind(leg: str) -> str:
    """"dense", "graph" or the leg's own name (a leg is named by its retriever: dense, graph, bm25...)."""
    return next((kind for kind in COSTLY_LEGS if kind in leg.lower()), leg)


def simpler_than(study: StudyResult, best: str) -> list[str]:
    """Every system simpler than `best`, simplest first."""
    ordered = sorted(study.systems, key=lambda s: simplicity_key(s, study.baseline))
    names = [s.name for s in ordered]
    return names[:names.index(best)]


def earns(rows: Sequence[HeadToHead], margin: float | None) -> tuple[bool, bool | None]:
    """(the best earns its complexity over the simpler system, the simpler one is within the margin) from
    the simpler-against-best rows (delta = simpler - best)."""
    better = any(r.significant and r.delta < 0 for r in rows)
    worse = any(r.significant and r.delta > 0 for r in rows)
    within = None if margin is None else all(r.ci_low > -margin for r in rows)
    earned = (better and not worse) if margin is None else not within
    return earned, within


def _pair_rows(study: StudyResult, best: str, other: str, simpler: SavedComparison | None) -> list[HeadToHead]:
    """`other` against `best`, overall, decision metrics: the baseline's from the head-to-head (negated
    there: that table is candidate - baseline), the rest from the simpler-systems comparison."""
    import dataclasses

    if other == study.baseline:
        return [dataclasses.replace(r, system=other, baseline=r.value, value=r.baseline, delta=-r.delta,
                                    ci_low=-r.ci_high, ci_high=-r.ci_low, wins=r.losses, losses=r.wins)
                for r in study.head_to_head if r.system == best and r.scope == "overall"]
    if simpler is None:
        return []
    return [HeadToHead.of(r, simpler.rows) for r in simpler.decision_rows("overall")
            if r.system == other and r.metric in study.decision_metrics]


def recommend_simplest(study: StudyResult, simpler: SavedComparison | None,
                       margin: float | None = None) -> Recommendation | None:
    """The simplest adequate system by `SIMPLICITY_RULES`, and what the dense and graph legs buy."""
    best = study.challenger
    if best is None:
        return None
    order = simpler_than(study, best)
    comparisons = []
    for other in order:
        rows = _pair_rows(study, best, other, simpler)
        earned, within = earns(rows, margin)
        extra = [leg for leg in study.system(best).legs if leg not in study.system(other).legs]
        comparisons.append(SimplerComparison(best=best, simpler=other, extra_legs=extra, rows=rows,
                                             richer_earns=earned, non_inferior=within))
    chosen = next((c for c in comparisons if not c.richer_earns), None)
    if chosen is None:
        because = (f"{best} is significantly better than every simpler system on a decision metric and worse on none"
                   if comparisons else f"{best} is the simplest system compared")
    elif margin is not None:
        because = f"{chosen.simpler} is within the margin {margin:g} of {best} on every decision metric"
    else:
        because = (f"{best} is not significantly better than {chosen.simpler} on any decision metric without being "
                   "significantly worse on another")
    why = judge_holds_back(study)
    return Recommendation(system=chosen.simpler if chosen else best, because=because,
                          order=[*order, best], comparisons=comparisons, legs=leg_worth(study, best, simpler),
                          margin=margin, provisional=bool(why), provisional_why=why)


def _interval(row: HeadToHead, sign: float) -> str:
    if at_ceiling(row):
        return f"{row.metric}: cannot show a difference (both at the ceiling, 1.0000)"
    low, high = sorted((sign * row.ci_low, sign * row.ci_high))
    return f"{row.metric} {sign * row.delta:+.4f} [{low:+.4f}, {high:+.4f}]" + (" (significant)" if row.significant
                                                                               else " (within noise)")


def leg_worth(study: StudyResult, best: str, simpler: SavedComparison | None) -> dict[str, str]:
    """For the dense and the graph leg: what it buys over the best candidate without it, in words."""
    out = {}
    best_legs = {leg_kind(leg) for leg in study.system(best).legs}
    metric = study.decision_metrics[0]
    for kind in COSTLY_LEGS:
        if kind not in best_legs:
            having = [s for s in study.systems if kind in {leg_kind(leg) for leg in s.legs}]
            if not having:
                out[kind] = f"no system compared has a {kind} leg: nothing measures it"
                continue
            top = max(having, key=lambda s: s.means.get("overall", {}).get(metric, float("-inf"))).name
            rows = _pair_rows(study, best, top, simpler)
            out[kind] = (f"the best candidate ({best}) has no {kind} leg; {top} (the best with one) over it: "
                         + ("; ".join(_interval(row, 1.0) for row in rows) if rows else "not compared"))
            continue
        without = [s for s in study.systems if kind not in {leg_kind(leg) for leg in s.legs}]
        if not without:
            out[kind] = f"every system compared has a {kind} leg: nothing measures it"
            continue
        other = max(without, key=lambda s: s.means.get("overall", {}).get(metric, float("-inf"))).name
        rows = _pair_rows(study, best, other, simpler)
        if not rows:
            out[kind] = f"{best} against {other} (the best without a {kind} leg) was not compared"
            continue
        out[kind] = (f"{best} over {other} (the best candidate without a {kind} leg): "
                     + "; ".join(_interval(row, -1.0) for row in rows))
    return out
