"""Each threat detector: a study planted to trigger it, and one planted not to."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from study_support import plugins

from recall_kit.study import threats
from recall_kit.study.collect import minimum_detectable, stratum_summaries, system_summary
from recall_kit.study.result import (
    AblationSummary,
    AgreementSummary,
    CorpusSummary,
    HeadToHead,
    LabelsSummary,
    LegReach,
    ProductionSummary,
    StratumSummary,
    StudyResult,
    SweepSummary,
    SystemSummary,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"


_ROW = HeadToHead(system="hybrid", metric="recall@5", scope="overall", n=80, baseline=0.5, value=0.6, delta=0.1,
                   ci_low=0.05, ci_high=0.15, p_value=0.001, p_holm=0.03, significant=True)


def clean_study() -> StudyResult:
    """A study that every detector passes: pooled, agreed, large graded strata, decided at the hook's k."""
    def system(name: str, legs: list[str], fusions: list[str], models: dict[str, str]) -> SystemSummary:
        return SystemSummary(name=name, retriever="+".join(legs), legs=legs, fusions=fusions, models=models,
                             means={"overall": {"recall@5": 0.6, "mrr@5": 0.5}}, unjudged_share=0.04,
                             first_hit_share={"paraphrase": 0.5},
                             reach=[LegReach(leg, 1.0, 12, 80) for leg in legs] if len(legs) > 1 else [])

    return StudyResult(
        name="clean", hook_k=5, decision_metrics=["recall@5", "mrr@5"], exploratory_metrics=[], baseline="fts5",
        seed=0, resamples=10000, corpus=CorpusSummary("dataset", 500, 0, 1.0),
        strata=[StratumSummary("paraphrase", 80, "supplied by the user", False, 0.3, 0.7,
                               {"recall@5": 0.05, "mrr@5": 0.04})],
        labels=LabelsSummary("judge", 400, 10, 400, 80),
        agreement=AgreementSummary(measured=True, kappa=0.74, n=200),
        systems=[system("fts5", ["fts5"], ["importance"], {}),
                 system("hybrid", ["fts5", "dense"], ["rrf", "importance"], {"dense": "minilm"})],
        head_to_head=[_ROW] * 30, ablation=AblationSummary(skipped="none"), sweep=SweepSummary(holdout=0.5, settings=3),
        production=ProductionSummary(substrate="fts5", embedding_model="minilm", priors=["importance"]),
    )


def planted(change: Callable[[StudyResult], None]) -> StudyResult:
    study = copy.deepcopy(clean_study())
    change(study)
    return study


def test_the_clean_study_triggers_no_detector() -> None:
    found, clear = threats.detect(clean_study())
    assert found == []
    assert clear == [key for key, _ in threats.DETECTORS]


def _set(**values: object) -> Callable[[StudyResult], None]:
    def change(study: StudyResult) -> None:
        for path, value in values.items():
            target: object = study
            *parents, last = path.split("__")
            for part in parents:
                target = target[int(part)] if isinstance(target, list) else getattr(target, part)  # type: ignore[index]
            if isinstance(target, dict):
                target[last] = value
            else:
                setattr(target, last, value)
    return change


CASES = [
    # key, the change that plants it, a word its evidence must hold
    ("holes", _set(systems__1__unjudged_share=0.3), "30% of its top-5 ids are unjudged"),
    ("unpooled-labels", _set(labels__unjudged_left=388, labels__pooled_labels=12, labels__source="qrels"),
     "388 of the pairs some system ranked in its top 10 still carry no label (12 label(s) added"),
    ("judge-agreement", _set(agreement=AgreementSummary(measured=False, why="one judge")), "one judge"),
    ("judge-agreement", _set(agreement__kappa=0.45), "kappa 0.45"),
    ("small-strata", _set(strata__0__queries=40), "40 queries; smallest detectable delta"),
    ("one-relevant", _set(strata__0__one_relevant_share=0.9), "90% of its queries have exactly one"),
    ("decision-k", _set(decision_metrics=["recall@10", "mrr@5"]), "reads the top 10, but the product reads the top 5"),
    ("decision-k", _set(decision_metrics=["mrr"]), "reads the whole ranking"),
    ("unreachable-leg", _set(systems__1__reach=[LegReach("fts5", 1.0, 9, 80), LegReach("dense", 0.3, 0, 80)]),
     "leg 'dense' (weight 0.3) placed no id"),
    ("no-holdout", _set(sweep=SweepSummary(holdout=None, settings=6)), "best of 6 settings on every query"),
    ("binary-ndcg", _set(decision_metrics=["ndcg@5"], strata__0__graded_share=0.1), "at most 10%"),
    ("production-mismatch", _set(production__substrate="pg-fts"), "production runs 'pg-fts'"),
    ("production-mismatch", _set(production__embedding_model="e5-large"), "production uses 'e5-large'"),
    ("production-prior", _set(systems__0__fusions=[], systems__1__fusions=["rrf"]), "prior 'importance'"),
    ("coarse-tests", _set(head_to_head=[_ROW] * 30, resamples=999), "can fall below 0.030"),
]


@pytest.mark.parametrize(("key", "change", "evidence"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_planted_threat_is_found_with_its_evidence(key: str, change: Callable[[StudyResult], None],
                                                     evidence: str) -> None:
    found, clear = threats.detect(planted(change))
    assert [threat.key for threat in found] == [key]
    assert evidence in " ".join(found[0].evidence)
    assert found[0].remedy and key not in clear


def test_a_weight_zero_leg_is_not_unreachable() -> None:
    study = planted(_set(systems__1__reach=[LegReach("fts5", 1.0, 9, 80), LegReach("dense", 0.0, 0, 80)]))
    assert threats.unreachable_leg(study) is None


def test_priors_said_to_be_none_leave_importance_out_without_a_threat() -> None:
    study = planted(_set(systems__0__fusions=[], systems__1__fusions=["rrf"], production__priors=[]))
    assert threats.production_prior(study) is None
    study.production.priors = None  # not said: the store's importance field counts as a prior
    assert threats.production_prior(study) is not None
    study.corpus.importance_share = 0.0
    assert threats.production_prior(study) is None


def test_minimum_detectable_delta_by_hand() -> None:
    # differences 0, 1, 0, 1: sd 0.57735; (1.96 + 0.84) * 0.57735 / 2
    assert minimum_detectable([0, 0, 1, 0], [0, 1, 1, 1]) == pytest.approx(2.801585 * 0.5773503 / 2, rel=1e-5)
    assert minimum_detectable([1, 1, 1], [1, 1, 1]) == float("inf")  # a ceiling: nothing to tell from


def _write(folder: Path, queries: list[dict[str, object]], qrels: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text((EXAMPLE / "corpus.jsonl").read_text())
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qrels))
    return folder


def test_a_stratum_built_from_one_systems_output_is_circular_and_a_corpus_rule_stratum_is_not(tmp_path: Path) -> None:
    from recall_kit import load_dataset, run_benchmark

    with plugins("recall-kit-fts5"):
        example = load_dataset(EXAMPLE)
        first = run_benchmark("fts5", example, k=5, metrics=["recall@5"], latency_sample=0)
        # Planted: the paraphrase questions, judged by fts5's own first hit (the seed study's mistake);
        # beside them, the example's hand-made exact stratum, whose rule is over the corpus alone.
        queries = [{"query_id": q.query_id, "text": q.text, "stratum": q.stratum} for q in example.queries
                   if q.stratum in ("paraphrase", "exact")]
        qrels = [{"query_id": q["query_id"], "relevant_ids": [first.rankings()[q["query_id"]][0]]}
                 if q["stratum"] == "paraphrase" else
                 {"query_id": q["query_id"], "relevance": example.qrels[str(q["query_id"])]} for q in queries]
        dataset = load_dataset(_write(tmp_path / "planted", queries, qrels))
        result = run_benchmark("fts5", dataset, k=5, metrics=["recall@5"], latency_sample=0)
    from recall_kit.curate.lint import lint_dataset

    findings = lint_dataset(dataset).to_dict()["findings"]
    strata = stratum_summaries(dataset, result, None, ["recall@5"], {}, findings)
    study = planted(_set(strata=strata, systems=[system_summary("fts5", result, dataset, 5)]))
    threat = threats.circular_stratum(study)
    assert threat is not None
    assert len(threat.evidence) == 1 and "stratum 'paraphrase'" in threat.evidence[0]
    exact = next(s for s in strata if s.name == "exact")
    assert exact.corpus_rule and study.systems[0].first_hit_share["exact"] >= 0.95  # as sure, but not circular


def test_label_shape_from_a_planted_dataset(tmp_path: Path) -> None:
    from recall_kit import load_dataset, run_benchmark

    queries = [{"query_id": f"q{i}", "text": f"kestrel query {i}", "stratum": "s"} for i in range(4)]
    qrels = [{"query_id": "q0", "relevant_ids": [1]}, {"query_id": "q1", "relevant_ids": [2]},
             {"query_id": "q2", "relevant_ids": [3]}, {"query_id": "q3", "relevance": {"4": 2, "5": 1}}]
    dataset = load_dataset(_write(tmp_path / "shape", queries, qrels))
    with plugins("recall-kit-fts5"):
        result = run_benchmark("fts5", dataset, k=5, metrics=["recall@5", "ndcg@5"], latency_sample=0)
    [stratum] = stratum_summaries(dataset, result, None, ["recall@5"], {}, [])
    assert (stratum.queries, stratum.one_relevant_share, stratum.graded_share) == (4, 0.75, 0.25)
    study = planted(_set(strata=[stratum], decision_metrics=["ndcg@5"]))
    keys = [t.key for t in threats.detect(study)[0]]
    assert keys == ["small-strata", "one-relevant", "binary-ndcg"]


def test_an_unreachable_stratum_is_found_and_a_reachable_or_saturated_one_is_not() -> None:
    from recall_kit.study.collect import mark_reach

    study = planted(_set(strata__0__queries=10))
    mark_reach(study.strata, family_rows=32, resamples=2000)
    threat = threats.unreachable_stratum(study)
    assert threat is not None and "times the family's 32 rows 0.0625" in threat.evidence[0]
    mark_reach(study.strata, family_rows=4, resamples=2000)  # 2^-9 * 4 < 0.05
    assert threats.unreachable_stratum(study) is None
    mark_reach(study.strata, family_rows=32, resamples=2000)
    study.strata[0].saturated = ["recall@5"]  # saturated: said as such, not as unreachable
    assert threats.unreachable_stratum(study) is None
    assert threats.saturated_stratum(study) is not None


def test_a_saturated_stratum_is_found_and_left_out_of_leg_reach(tmp_path: Path) -> None:
    from recall_kit import SystemSpec, load_dataset, run_benchmark
    from recall_kit.study.collect import leg_reach, saturation

    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion"):
        example = load_dataset(EXAMPLE)
        fused = run_benchmark(SystemSpec(retriever="fts5+bm25", fusions=["rrf"]), example, k=5, metrics=["recall@5"], latency_sample=0)
        fts5 = run_benchmark("fts5", example, k=5, metrics=["recall@5"], latency_sample=0)
    found = saturation({"fts5": fts5, "fused": fused}, ["recall@5"])
    assert found["exact"] == ["recall@5"]  # both at 1.000 on the example's exact stratum
    assert found["paraphrase"] == [] and found["multihop"] == []
    every = leg_reach(fused, 5)
    kept = leg_reach(fused, 5, {"exact"})
    assert every[0].queries == 120 and kept[0].queries == 80
    assert leg_reach(fused, 5, {"exact", "paraphrase", "multihop"}) == []  # nothing left to check
