"""`recall-kit study`: from a memory store to a decision document that names its own weaknesses.

`init_study` writes a commented study.toml; `run_study` runs the build graph (steps/) and writes
the document; `study_status` says which steps are done, stale or missing. The pieces: config.py
(study.toml), pipeline/ (the build graph: fingerprints, the manifest, the folder's rules and lock,
a step's declaration), steps/ (one module per step: what it reads, its library call, its Reproduce
line, its RULE), collect.py (the typed result from the artefacts), rules.py (the recommendation),
threats.py (the detectors), people.py (people's labels), document.py (markdown and HTML).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from recall_kit.lazy import lazy_attributes

if TYPE_CHECKING:
    from recall_kit.study.pipeline.graph import BuildLog, StepState, StudyGraph
    from recall_kit.study.result import StudyResult

_LAZY = {
    "init_study": "recall_kit.study.init",
    "load_study": "recall_kit.study.config",
    "StudyResult": "recall_kit.study.result",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


def run_study(path: str | Path, log: Callable[[str], None] = lambda line: None) -> tuple[StudyResult, BuildLog]:
    """Run (or finish) the study of `path`: every step whose inputs changed, then the document.

    The study folder is checked first (new, empty or made by recall-kit for this study file; see
    `recall_kit.study.pipeline.folder`) and locked for the run. Returns the `StudyResult` (read back from
    study.json) and the `BuildLog` (what was computed)."""
    import json

    from recall_kit.study.pipeline.folder import check_study_folder, study_lock, study_reference
    from recall_kit.study.result import StudyResult
    from recall_kit.study.steps import build_graph
    from recall_kit.study.validate import check_study_file

    config = check_study_file(path)  # the whole file, before any step
    check_study_folder(config.folder, config.source)
    config.folder.mkdir(parents=True, exist_ok=True)
    with study_lock(config.folder):
        graph = build_graph(config)  # the manifest read under the lock: another run may have just finished
        graph.claim(study_reference(config.folder, config.source))
        build = graph.run(log=log)
        _place_document(graph)
    path = graph.folder / "study.json"
    return StudyResult.from_dict(json.loads(path.read_text(encoding="utf-8")), str(path)), build


def _place_document(graph: StudyGraph) -> None:
    """The document beside the steps, where it is looked for; a link at its name is replaced, not followed."""
    from recall_kit.fileio import write_text_atomic
    from recall_kit.study.pipeline.folder import DOCUMENT_FILES

    for name in DOCUMENT_FILES:
        text = (graph.path("document") / name).read_text(encoding="utf-8")
        target = graph.folder / name
        if target.is_symlink() or not target.is_file() or target.read_text(encoding="utf-8") != text:
            write_text_atomic(target, text, follow_links=False)


def study_status(path: str | Path) -> list[StepState]:
    """Each step of the study of `path`: done, stale (and why) or missing."""
    from recall_kit.study.config import load_study, study_file
    from recall_kit.study.steps import build_graph
    from recall_kit.study.validate import check_shapes

    path = study_file(path)  # the file, or a folder's
    check_shapes(path)
    return build_graph(load_study(path)).status()


__all__ = ["init_study", "load_study", "run_study", "study_status", "StudyResult"]
