"""Threats to validity, each detected from the study's own data.

A detector is a function of the `StudyResult` that returns a `Threat` (its evidence and what would
remove it) or None. `DETECTORS` lists them in the order the document shows them; `detect` runs
every one and says which found nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from recall_kit.study.result import StratumSummary, StudyResult, Threat
from recall_kit.study.rules import detectable

#: A stratum one system answers at rank 1 this often, with no corpus-only rule behind it, reads as circular.
CIRCULAR_FIRST_HIT_SHARE = 0.95
#: A system whose top k holds more unjudged ids than this share has holes in its labels.
HOLES_SHARE = 0.10
#: A stratum whose queries mostly have one relevant id: recall@k is then hit@k.
ONE_RELEVANT_SHARE = 0.5
#: nDCG needs grades: a headline nDCG on strata with fewer graded queries than this share is binary in disguise.
GRADED_SHARE = 0.5

Detector = Callable[..., "Threat | None"]


def _percent(value: float) -> str:
    return f"{value:.0%}"


def circular_stratum(study: StudyResult, **_: object) -> Threat | None:
    """A stratum that one system answers at rank 1 almost always, which no corpus-only rule defines."""
    evidence = []
    for stratum in study.strata:
        if stratum.corpus_rule or stratum.one_relevant_share < ONE_RELEVANT_SHARE:
            continue
        for system in study.systems:
            share = system.first_hit_share.get(stratum.name, 0.0)
            if share >= CIRCULAR_FIRST_HIT_SHARE:
                evidence.append(f"stratum {stratum.name!r} ({stratum.built}): {system.name} ranks the one relevant "
                                f"id first in {_percent(share)} of its one-relevant queries, and no rule over the "
                                "corpus alone defines the stratum")
    if not evidence:
        return None
    return Threat("circular-stratum", "A stratum may be built from one system's output (circular)", evidence,
                  "Build the stratum from the corpus alone (`recall-kit dataset generate --generator exact`, "
                  "[evaluation_set] exact = N), or have its labels made without that system in the loop.")


def holes(study: StudyResult, **_: object) -> Threat | None:
    """Unjudged ids in each system's top k, scored as not relevant; per verdict, whether they can flip it."""
    from recall_kit.study.hole_evidence import verdict_bounds
    from recall_kit.study.label_report import flip_line

    shares = {s.name: s.unjudged_share for s in study.systems}
    if max(shares.values(), default=0.0) <= HOLES_SHARE:
        return None
    flips = [flip_line(verdict, rows) for verdict, rows in verdict_bounds(study) if rows]
    scored = ("scored as not relevant" if study.labels.source == "qrels"
              else f"graded by the model judge {study.labels.source!r}: a prediction, not a label")
    return Threat("holes", f"Holes: much of each system's top {study.hook_k} is unlabelled",
                  [f"{name}: {_percent(share)} of its top-{study.hook_k} ids are unjudged by a person or the qrels ({scored})"
                   for name, share in shares.items()] + flips,
                  "Label the pairs that can flip a verdict, heaviest first: `recall-kit label` on this study "
                  "(each judgment it asks for can move a verdict that can flip), then rerun the study; or judge the "
                  f"pool ([judging] judge = a model judge, [judging] sample = N) until every system's top "
                  f"{study.hook_k} is judged.")


def unpooled_labels(study: StudyResult, **_: object) -> Threat | None:
    """Pooled pairs the labels still leave unjudged: how many remain, whoever labelled the rest."""
    labels = study.labels
    if labels.unjudged_left == 0:
        return None
    added = (f"{labels.pooled_labels} label(s) added from the pool" if labels.pooled_labels
             else "none added from the pool")
    return Threat("unpooled-labels", "Pooled pairs without a label",
                  [f"labels: {labels.source}; {labels.unjudged_left} of the pairs some system ranked in its top "
                   f"{labels.pool_depth} still carry no label ({added}; {labels.pool_ids} were unjudged before "
                   f"any, over {labels.pool_queries} queries)"],
                  "Judge the pooled ids (steps/pool/pool.jsonl): `recall-kit label` on this study, heaviest first, "
                  "or a model judge ([judging] judge), so that a system is not marked wrong for relevant memories "
                  "nobody looked at.")


def judge_agreement(study: StudyResult, **_: object) -> Threat | None:
    """Judge agreement unmeasured, or kappa below 0.6."""
    agreement = study.agreement
    if not agreement.measured:
        return Threat("judge-agreement", "Judge agreement was not measured",
                      [f"no second judge: {agreement.why or 'not measured'}"],
                      "Label the intervals' sample yourself (`recall-kit label` on this study offers it first), then "
                      "rerun the study: your grades measure the judge's Cohen's kappa (with its interval) and give "
                      "the hole-aware interval; or set [judging] agreement to a second judge's grades file.")
    kappa, floor = agreement.kappa, agreement.threshold
    if kappa is None or kappa < floor:
        return Threat("judge-agreement", f"Judge agreement below {floor:g}" if kappa is not None else
                      "Judge agreement undefined",
                      [f"Cohen's kappa {agreement.kappa_words()} on {agreement.n} pairs ({agreement.against})"
                       + (": one side graded every shared pair alike" if kappa is None else "")],
                      "Improve the judge (prompt, model) or the grading guide until kappa is at least "
                      f"{floor:g}, or label by hand.")
    return None


def small_strata(study: StudyResult, min_queries: int = 50, **_: object) -> Threat | None:
    """Strata with fewer queries than `min_queries`, with the smallest delta detectable at that size."""
    evidence = [f"stratum {s.name!r}: {s.queries} queries; smallest detectable delta " + _detectable_words(s)
                for s in study.strata if s.queries < min_queries]
    if not evidence:
        return None
    return Threat("small-strata", f"Strata under {min_queries} queries", evidence,
                  f"Add queries to each stratum (at least {min_queries}; [evaluation_set] exact = N generates "
                  "exact ones from the corpus), so that a smaller real difference can show.")


def _detectable_words(stratum: StratumSummary) -> str:
    """The one smallest detectable delta per metric the document prints: at the Holm family's
    corrected level when the stratum has one (as the verdicts use it), else at alpha 0.05."""
    if stratum.family_rows and stratum.minimum_detectable_in_family:
        values, how = stratum.minimum_detectable_in_family, (f"in its Holm family (alpha 0.05 over "
                                                             f"{stratum.family_rows} rows, power 0.8)")
    else:
        values, how = stratum.minimum_detectable, "(alpha 0.05, power 0.8)"
    return how + ": " + ", ".join(f"{metric} {detectable(value)}" for metric, value in values.items())


def unreachable_stratum(study: StudyResult, **_: object) -> Threat | None:
    """A stratum too small for any effect in it to pass Holm's first step in its family."""
    evidence = [f"stratum {s.name!r}: {s.queries} queries; the smallest p a paired randomisation test gives "
                f"there is {s.smallest_p:.4g}, times the family's {s.family_rows} rows "
                f"{(s.smallest_p or 0) * s.family_rows:.3g}, not below 0.05: nothing there can reach significance "
                "(whatever its delta) unless stronger rows pass first"
                for s in study.strata if not s.reachable and not s.saturated]
    if not evidence:
        return None
    return Threat("unreachable-stratum", "A stratum where no effect can reach significance", evidence,
                  "Add queries to the stratum, or decide on fewer rows (fewer candidates or decision metrics), "
                  "or read its deltas as exploratory.")


def saturated_stratum(study: StudyResult, **_: object) -> Threat | None:
    """A stratum where every system scores the ceiling on a decision metric: it cannot separate them."""
    evidence = [f"stratum {s.name!r} ({s.queries} queries): every system scores 1.000 on {', '.join(s.saturated)}"
                for s in study.strata if s.saturated]
    if not evidence:
        return None
    return Threat("saturated-stratum", "A stratum every system aces (saturated)", evidence,
                  "Make the stratum harder (exact_options, other generators) or drop it from the decision; "
                  "it is left out of the leg-reach check.")


def one_relevant(study: StudyResult, **_: object) -> Threat | None:
    """Most queries with one relevant id: recall@k is hit@k, and recall@5 ~ recall@10 says little."""
    evidence = [f"stratum {s.name!r}: {_percent(s.one_relevant_share)} of its queries have exactly one relevant id"
                for s in study.strata if s.one_relevant_share > ONE_RELEVANT_SHARE]
    if not evidence:
        return None
    return Threat("one-relevant", "Most queries have one relevant id (recall@k is hit@k there)", evidence,
                  "Judge more of each query's pool (other relevant memories, near-duplicate twins: "
                  "`recall-kit dataset lint --fix-twins`), or read those strata as hit rates.")


def _cutoff(metric: str) -> int | None:
    match = re.search(r"@(\d+)$", metric)
    return int(match.group(1)) if match else None


def decision_k(study: StudyResult, **_: object) -> Threat | None:
    """A decision metric that reads another depth than the hook's k."""
    evidence = [f"decision metric {metric!r} reads {'the whole ranking' if _cutoff(metric) is None else f'the top {_cutoff(metric)}'}"
                f", but the product reads the top {study.hook_k}"
                for metric in study.decision_metrics if _cutoff(metric) != study.hook_k]
    if not evidence:
        return None
    return Threat("decision-k", "The decision metric's k is not the hook's k", evidence,
                  f"Decide on metrics at the hook's k ([study] decision_metrics = [\"recall@{study.hook_k}\", "
                  f"\"mrr@{study.hook_k}\"]).")


def unreachable_leg(study: StudyResult, **_: object) -> Threat | None:
    """A leg with weight above 0 that never gets an id only it found into the fused top k."""
    evidence = []
    reaches = [(system.name, system.reach) for system in study.systems]
    if study.ablation.reach:
        reaches.append((f"{study.ablation.system} (ablation)", study.ablation.reach))
    for name, reach in reaches:
        for leg in reach:
            if leg.weight > 0 and leg.queries_reached == 0:
                evidence.append(f"{name}: leg {leg.leg!r} (weight {leg.weight:g}) placed no id that only it found in "
                                f"the fused top {study.hook_k} of any of {leg.queries} queries")
    if not evidence:
        return None
    return Threat("unreachable-leg", f"A leg cannot reach the fused top {study.hook_k}", evidence,
                  "Check the fusion: a normalisation or weight that never lets the leg's own finds up (try convex "
                  "min-max, a higher weight, or sweep the weight with a holdout); or drop the leg.")


def untuned_holdout(study: StudyResult, **_: object) -> Threat | None:
    """A choice tuned on the same queries it is reported on."""
    sweep = study.sweep
    if sweep.skipped or sweep.holdout:
        return None
    return Threat("no-holdout", "A choice was tuned without a held-out half",
                  [f"the sweep chose its best of {sweep.settings} settings on every query and reports it "
                   "on the same queries"],
                  "Set [sweep] holdout = 0.5: the best is chosen on one half and reported on the other.")


def binary_ndcg(study: StudyResult, **_: object) -> Threat | None:
    """An nDCG headline over labels that are mostly binary."""
    ndcg = [metric for metric in study.decision_metrics if metric.lower().startswith("ndcg")]
    graded = max((s.graded_share for s in study.strata), default=0.0)
    if not ndcg or graded >= GRADED_SHARE:
        return None
    return Threat("binary-ndcg", "Binary labels behind an nDCG headline",
                  [f"decision metric {', '.join(ndcg)}; at most {_percent(graded)} of any stratum's queries "
                   "have a grade above 1"],
                  "Grade the labels (0-3), or decide on recall@k and MRR@k, which binary labels support.")


def production_mismatch(study: StudyResult, **_: object) -> Threat | None:
    """The substrate or embedding model evaluated is not the one in production."""
    production = study.production
    evidence = []
    substrate = production.substrate
    if substrate and not any(substrate in system.legs for system in study.systems):
        evidence.append(f"production runs {substrate!r}; no evaluated system has it as a leg "
                        f"(legs evaluated: {', '.join(sorted({leg for s in study.systems for leg in s.legs}))})")
    model = production.embedding_model
    if model:
        for system in study.systems:
            for leg, used in system.models.items():
                if used != model:
                    evidence.append(f"{system.name}: leg {leg!r} embeds with {used!r}; production uses {model!r}")
    if not evidence:
        return None
    return Threat("production-mismatch", "The evaluated substrate or embedding model is not production's", evidence,
                  "Evaluate what production runs (its retriever as the baseline, its embedding model in the dense "
                  "legs' options), or say the result is about the systems evaluated, not production.")


def production_prior(study: StudyResult, **_: object) -> Threat | None:
    """A prior production ranks with (importance) left out of every system compared."""
    priors = study.production.priors
    if priors is None:  # not said: the store's own importance field is taken as a prior it may use
        priors = ["importance"] if study.corpus.importance_share >= 0.5 else []
    used = {fusion for system in study.systems for fusion in system.fusions}
    missing = [prior for prior in priors if prior not in used]
    if not missing:
        return None
    said = study.production.priors is not None
    where = ("named in [production] priors" if said
             else f"{_percent(study.corpus.importance_share)} of the memories carry it")
    return Threat("production-prior", "A production prior is left out of the comparison",
                  [f"prior {prior!r}: {where}; no system compared uses the {prior!r} fusion" for prior in missing],
                  "Add the prior to the candidates (--fusion ... --fusion importance), or set [production] "
                  "priors = [] if production does not rank with it.")


#: The smallest Holm-adjusted p the decision family can reach, at or above which a threat is raised.
RESOLUTION_FLOOR = 0.025


def coarse_tests(study: StudyResult, **_: object) -> Threat | None:
    """Too few resamples for the decision family: the smallest reachable Holm-adjusted p nears alpha."""
    rows = len(study.head_to_head)
    floor = rows / (study.resamples + 1)  # the smallest randomisation p, times the family's size
    if not rows or floor < RESOLUTION_FLOOR:
        return None
    wanted = int(rows / 0.005)  # the floor at 0.005: a tenth of alpha
    return Threat("coarse-tests", "Too few resamples for the number of decision rows",
                  [f"{rows} decision rows in one Holm family and {study.resamples} resamples: no Holm-adjusted p "
                   f"can fall below {floor:.3f}, so a real difference may be called noise"],
                  f"Raise [study] resamples to at least {wanted} (or decide on fewer metrics or candidates).")


DETECTORS: list[tuple[str, Detector]] = [
    ("circular-stratum", circular_stratum),
    ("holes", holes),
    ("unpooled-labels", unpooled_labels),
    ("judge-agreement", judge_agreement),
    ("small-strata", small_strata),
    ("unreachable-stratum", unreachable_stratum),
    ("saturated-stratum", saturated_stratum),
    ("one-relevant", one_relevant),
    ("decision-k", decision_k),
    ("unreachable-leg", unreachable_leg),
    ("no-holdout", untuned_holdout),
    ("binary-ndcg", binary_ndcg),
    ("production-mismatch", production_mismatch),
    ("production-prior", production_prior),
    ("coarse-tests", coarse_tests),
]


def detect(study: StudyResult, min_queries: int = 50) -> tuple[list[Threat], list[str]]:
    """Every detector over `study`: the threats found, and the keys of the detectors that found nothing."""
    found, clear = [], []
    for key, detector in DETECTORS:
        threat = detector(study, min_queries=min_queries)
        if threat is None:
            clear.append(key)
        else:
            found.append(threat)
    return found, clear
