"""The document step, last: the study result gathered from every step's artefacts (`collect`, with
study/collect.py's summaries) and its renderings, study.json, study.md and study.html (study/document.py). It reads the Reproduce
lines every other step derives from its own reads, and a hash of the code that renders it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.fileio import write_json_atomic
from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule, read_output

if TYPE_CHECKING:
    from recall_kit.dataset import Dataset
    from recall_kit.measure.result import BenchmarkResult
    from recall_kit.study.result import StudyResult


@dataclass(frozen=True)
class DocumentReads:
    """What the document reads of study.toml beside the artefacts, the Reproduce lines every other
    step derives from its own reads, and a hash of the code that renders it."""

    name: str
    systems: list[str]
    baseline: str
    hook_k: int
    decision: list[str]
    exploratory: list[str]
    seed: int
    resamples: int
    production: dict[str, Any]
    min_queries: int
    margin: float | None
    min_kappa: float
    sweep_system: str
    commands: dict[str, str]
    code: str


def document_reads(config: StudyConfig, commands: dict[str, str], code: str) -> DocumentReads:
    return DocumentReads(config.name, [s.name for s in config.systems], config.baseline, config.hook_k,
                         list(config.decision_metrics), list(config.exploratory_metrics), config.seed,
                         config.resamples, dict(config.production), config.min_queries, config.margin,
                         config.min_kappa, config.sweep_system if config.sweep_grid else "", commands, code)


@cache
def renderer_hash() -> str:
    """A hash of the code that makes the document: the module of `make_document` and every module of
    recall_kit it imports, followed through the imports (study/pipeline/code.py): a change to the
    rules, the detectors, the renderers (reporting/html.py, decide/holes_report.py, ...) re-renders it."""
    from recall_kit.study.pipeline.code import code_hash

    return code_hash(make_document.__module__)


def make_document(reads: DocumentReads, artefacts: Artefacts, folder: Path) -> None:
    """The study result (study.json) and its renderings (study.md, study.html)."""
    from recall_kit.study.document import render_html, render_markdown

    result = collect(reads, artefacts)
    write_json_atomic(folder / "study.json", result.to_dict())
    (folder / "study.md").write_text(render_markdown(result), encoding="utf-8")
    (folder / "study.html").write_text(render_html(result), encoding="utf-8")


RULE = StepRule("document", DocumentReads,
                lambda at, artefacts: document_reads(at.config, artefacts.commands(), renderer_hash()),
                make_document, needs=lambda at: list(at.earlier))


def collect(reads: DocumentReads, artefacts: Artefacts) -> StudyResult:
    """Read every step's artefacts into the typed study result (each step's typed output, study/collect.py's
    summaries); apply the rules; run the detectors."""
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.compare import SavedComparison
    from recall_kit.measure.result import load_result
    from recall_kit.study.collect import (
        ablation_summary,
        agreement_summary,
        head_to_head,
        judge_measured,
        saturation,
        sensitive_labels,
        sweep_summary,
        system_summary,
        unjudged_left,
    )
    from recall_kit.study.hole_evidence import attach_bounds, attach_intervals
    from recall_kit.study.result import CorpusSummary, LabelsSummary, ProductionSummary, StudyResult
    from recall_kit.study.rules import mark_provisional, recommend, recommend_simplest
    from recall_kit.study.steps.agreement import AgreementOutput
    from recall_kit.study.steps.bounds import BoundsOutput
    from recall_kit.study.steps.judgments import JudgmentsOutput
    from recall_kit.study.steps.pool import PoolOutput
    from recall_kit.study.threats import detect

    dataset = load_dataset(artefacts.path("judgments") / "dataset")
    results = {name: load_result(artefacts.path(f"eval/{name}") / "result.json") for name in reads.systems}
    comparison = SavedComparison.load(artefacts.path("compare") / "comparison.json")
    saturated = saturation(results, reads.decision)
    full = {stratum for stratum, metrics in saturated.items() if metrics}
    from recall_kit.study.people import labelled_qrels

    labelled = labelled_qrels(artefacts.path("judgments"))
    systems = [system_summary(name, result, dataset, reads.hook_k, full, labelled) for name, result in results.items()]
    pool = read_output(PoolOutput, artefacts.path("pool") / "pool.json")
    judgments = read_output(JudgmentsOutput, artefacts.path("judgments") / "judgments.json")
    agreement = read_output(AgreementOutput, artefacts.path("agreement") / "agreement.json")
    production = reads.production
    study = StudyResult(
        name=reads.name, hook_k=reads.hook_k, decision_metrics=reads.decision,
        exploratory_metrics=reads.exploratory, baseline=reads.baseline, seed=reads.seed,
        resamples=reads.resamples,
        corpus=read_output(CorpusSummary, artefacts.path("corpus") / "corpus.json"),
        strata=[], labels=LabelsSummary(judgments.source, judgments.pooled_labels, pool.depth, pool.ids, pool.queries,
                                        unjudged_left=unjudged_left(dataset, results, pool.depth),
                                        **judge_measured(judgments), **sensitive_labels(artefacts, judgments)),
        agreement=agreement_summary(agreement, reads.min_kappa), systems=systems,
        head_to_head=head_to_head(comparison, reads.baseline),
        ablation=ablation_summary(artefacts, reads.hook_k, reads.decision, full),
        sweep=sweep_summary(artefacts, reads.sweep_system),
        production=ProductionSummary(system=production.get("system"), substrate=production.get("substrate"),
                                     embedding_model=production.get("embedding_model"),
                                     priors=production.get("priors")),
    )
    simpler = artefacts.path("simpler") / "comparison.json"
    study.recommendation = recommend_simplest(study, SavedComparison.load(simpler) if simpler.is_file() else None,
                                              margin=reads.margin)
    _strata(study, reads, artefacts, dataset, results, saturated)
    study.verdicts = recommend(study)
    attach_bounds(study, read_output(BoundsOutput, artefacts.path("bounds") / "bounds.json"),
                  dataclasses.asdict(judgments.people) if judgments.people else None, agreement.people)
    attach_intervals(study, artefacts)
    mark_provisional(study)
    study.threats, study.clear = detect(study, min_queries=reads.min_queries)
    study.commands = dict(reads.commands)
    study.timings = artefacts.seconds()
    return study


def _strata(study: StudyResult, reads: DocumentReads, artefacts: Artefacts, dataset: Dataset,
            results: Mapping[str, BenchmarkResult], saturated: Mapping[str, list[str]]) -> None:
    """The strata's summaries (the smallest detectable delta of the verdicts' system against the
    baseline), saturation and reach, on the study result."""
    from recall_kit.study.collect import mark_reach, stratum_summaries
    from recall_kit.study.rules import verdict_subject
    from recall_kit.study.steps.evaluation_set import Strata
    from recall_kit.study.steps.lint import LintOutput

    challenger = verdict_subject(study)
    study.strata = stratum_summaries(
        dataset, results[reads.baseline], results[challenger] if challenger else None, reads.decision,
        read_output(Strata, artefacts.path("evaluation-set") / "strata.json"),
        read_output(LintOutput, artefacts.path("lint") / "lint.json").findings)
    for stratum in study.strata:
        stratum.saturated = saturated.get(stratum.name, [])
    mark_reach(study.strata, len(study.head_to_head), reads.resamples)
