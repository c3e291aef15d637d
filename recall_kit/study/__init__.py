"""`recall-kit study`: from a memory store to a decision document that names its own weaknesses.

`init_study` writes a commented study.toml; `run_study` runs the build graph (steps.py) and writes
the document; `study_status` says which steps are done, stale or missing. The pieces: config.py
(study.toml), graph.py (fingerprints, the manifest), steps.py (the library calls), collect.py (the
typed result from the artefacts), rules.py (the recommendation), threats.py (the detectors),
document.py (markdown and HTML).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from recall_kit.lazy import lazy_attributes

_LAZY = {
    "init_study": "recall_kit.study.init",
    "load_study": "recall_kit.study.config",
    "StudyResult": "recall_kit.study.result",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


def run_study(path: str | Path, log: Callable[[str], None] = lambda line: None) -> tuple[Any, Any]:
    """Run (or finish) the study of `path`: every step whose inputs changed, then the document.

    Returns the `StudyResult` (read back from study.json) and the `BuildLog` (what was computed)."""
    import json

    from recall_kit.fileio import write_text_atomic
    from recall_kit.study.result import StudyResult
    from recall_kit.study.steps import build_graph
    from recall_kit.study.validate import check_study_file

    config = check_study_file(path)  # the whole file, before any step
    graph = build_graph(config)
    build = graph.run(log=log)
    for name in ("study.md", "study.html", "study.json"):  # the document beside the steps, where it is looked for
        text = (graph.path("document") / name).read_text(encoding="utf-8")
        target = graph.folder / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            write_text_atomic(target, text)
    data = json.loads((graph.folder / "study.json").read_text(encoding="utf-8"))
    return StudyResult.from_dict(data), build


def study_status(path: str | Path) -> list[Any]:
    """Each step of the study of `path`: done, stale (and why) or missing."""
    from recall_kit.study.config import load_study
    from recall_kit.study.steps import build_graph
    from recall_kit.study.validate import check_shapes

    check_shapes(Path(path))
    return build_graph(load_study(path)).status()


__all__ = ["init_study", "load_study", "run_study", "study_status", "StudyResult"]
