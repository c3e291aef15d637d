"""The code a step runs, fingerprinted (recall_kit.study.pipeline.code): the document's fingerprint
covers every module of recall_kit its make function reaches through imports, found from the import
statements themselves; an edit to any of them makes the document stale, one outside them does not."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from study_support import EXAMPLE, LEXICAL_PAIR, plugins

from recall_kit.study import run_study, study_status
from recall_kit.study.pipeline import code
from recall_kit.study.pipeline.code import code_hash, imported_names, module_closure, package_folder
from recall_kit.study.steps.document import make_document, renderer_hash

ROOT = Path(__file__).resolve().parents[3]
DOCUMENT = make_document.__module__

#: Modules that render part of the document, the three the hand-kept list missed first
#: (tests/study/test_label_report.py: the flip lines; decide/holes_report.py's table rows).
RENDERERS = ["recall_kit.reporting.html", "recall_kit.reporting.formats", "recall_kit.decide.holes_report",
             "recall_kit.study.label_report", "recall_kit.study.document", "recall_kit.study.collect",
             "recall_kit.study.rules", "recall_kit.study.threats", "recall_kit.study.result"]


def _ast_names(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """What `imported_names` must find, as Python's own parser reads the module."""
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        test = node.test if isinstance(node, ast.If) else None
        if test is not None and "TYPE_CHECKING" in ast.unparse(test):
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[:len(parts) - node.level + 1], *([base] if base else [])])
            found.update({base, *(f"{base}.{alias.name}" for alias in node.names)})
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_the_import_scan_finds_every_import_pythons_parser_finds_in_every_module() -> None:
    modules = sorted((ROOT / "recall_kit").rglob("*.py"))
    assert len(modules) > 100
    for path in modules:
        source = path.read_text(encoding="utf-8")
        name, is_package = _dotted(path), path.name == "__init__.py"
        wanted = {found for found in _ast_names(ast.parse(source), name, is_package) if found.startswith("recall_kit")}
        missed = wanted - imported_names(source, name, is_package)
        assert not missed, f"{path.relative_to(ROOT)}: the scan misses {sorted(missed)}"


def test_the_scan_reads_the_forms_an_import_takes_and_skips_type_checking_ones() -> None:
    source = '''"""from recall_kit.never import docstring_lines  (a docstring line can only add a module)"""
import os, recall_kit.errors as errors
from recall_kit.study import (  # the steps
    bounds,
    collect as gathered,
)
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recall_kit.study.result import StudyResult

    import recall_kit.cli
else:
    from recall_kit import fileio


def render() -> None:
    from . import document
    from ..reporting.html import page
'''
    found = imported_names(source, "recall_kit.study.steps", is_package=False)
    assert {"os", "recall_kit.errors", "recall_kit.study", "recall_kit.study.bounds", "recall_kit.study.collect",
            "recall_kit.fileio", "recall_kit.study.document", "recall_kit.reporting.html",
            "recall_kit.reporting.html.page"} <= found
    assert not {"recall_kit.study.result", "recall_kit.study.result.StudyResult", "recall_kit.cli"} & found
    assert _ast_names(ast.parse(source), "recall_kit.study.steps", False) - {"recall_kit.never",
                                                                            "recall_kit.never.docstring_lines"} <= found


def test_the_documents_code_reaches_every_module_that_renders_it_and_not_the_cli() -> None:
    reached = module_closure(DOCUMENT)
    assert [name for name in RENDERERS if name not in reached] == []
    assert all(path.is_file() and path.suffix == ".py" for path in reached.values())
    # what the document's code never runs: the command line, the labelling page's server
    assert not {"recall_kit.cli", "recall_kit.label.server", "recall_kit.scaffold"} & set(reached)
    assert renderer_hash() == code_hash(DOCUMENT)


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """recall_kit's sources, copied: a place to edit a module."""
    folder = tmp_path_factory.mktemp("code")
    shutil.copytree(package_folder(DOCUMENT) / "recall_kit", folder / "recall_kit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "static", "templates", "examples"))
    return folder


def test_an_edit_to_any_module_the_document_reaches_changes_its_fingerprint(copy: Path) -> None:
    before = code_hash(DOCUMENT, copy)
    assert before == code_hash(DOCUMENT)  # the copy is the package, byte for byte
    reached = module_closure(DOCUMENT, copy)
    assert len(reached) > len(RENDERERS)
    unchanged = []
    for name, path in reached.items():
        source = path.read_bytes()
        path.write_bytes(source + b"\n# edited\n")
        try:
            if code_hash(DOCUMENT, copy) == before:
                unchanged.append(name)
        finally:
            path.write_bytes(source)
    assert unchanged == []
    assert code_hash(DOCUMENT, copy) == before


def test_an_edit_outside_it_leaves_the_fingerprint_and_an_import_added_brings_a_module_in(copy: Path) -> None:
    before = code_hash(DOCUMENT, copy)
    server = copy / "recall_kit" / "label" / "server.py"
    document = copy / "recall_kit" / "study" / "document.py"
    kept = server.read_bytes(), document.read_bytes()
    try:
        server.write_bytes(kept[0] + b"\n# edited\n")
        assert code_hash(DOCUMENT, copy) == before
        document.write_bytes(kept[1] + b"\n\ndef served() -> None:\n    from recall_kit.label import server\n")
        assert "recall_kit.label.server" in module_closure(DOCUMENT, copy)
    finally:
        server.write_bytes(kept[0])
        document.write_bytes(kept[1])


LEXICAL = f"""
[study]
name = "two lexical systems"
folder = "out"
hook_k = 5
resamples = 100

[store]
dataset = "{EXAMPLE.as_posix()}"

[evaluation_set]
queries = "dataset"

[judging]
judge = "qrels"
""" + LEXICAL_PAIR


def test_a_done_document_goes_stale_when_a_module_that_renders_it_changes(
        tmp_path: Path, copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    study = tmp_path / "study.toml"
    study.write_text(LEXICAL, encoding="utf-8")
    html = copy / "recall_kit" / "reporting" / "html.py"
    kept = html.read_bytes()
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        run_study(study)
        # the package read from the copy: the same code, every step done
        monkeypatch.setattr(code, "package_folder", lambda module: copy)
        renderer_hash.cache_clear()
        try:
            assert {state.name: state.state for state in study_status(study)}["document"] == "done"
            html.write_bytes(kept + b"\n# edited\n")
            renderer_hash.cache_clear()
            states = {state.name: (state.state, state.why) for state in study_status(study)}
        finally:
            html.write_bytes(kept)
            renderer_hash.cache_clear()
    assert states.pop("document")[0] == "stale"
    assert all(state == "done" for state, _ in states.values()), states
