"""The document step, last: the study result gathered from every step's artefacts (study/collect.py)
and its renderings, study.json, study.md and study.html (study/document.py). It reads the Reproduce
lines every other step derives from its own reads, and a hash of the code that renders it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from recall_kit.fileio import write_json_atomic
from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule


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
    from recall_kit.study.collect import collect
    from recall_kit.study.document import render_html, render_markdown

    result = collect(reads, artefacts)
    write_json_atomic(folder / "study.json", result.to_dict())
    (folder / "study.md").write_text(render_markdown(result), encoding="utf-8")
    (folder / "study.html").write_text(render_html(result), encoding="utf-8")


RULE = StepRule("document", DocumentReads,
                lambda at, artefacts: document_reads(at.config, artefacts.commands(), renderer_hash()),
                make_document, needs=lambda at: list(at.earlier))
