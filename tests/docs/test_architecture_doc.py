"""docs/architecture.md's claims about where things live, checked against the code: the three ways a
command is registered, the study steps' Reads dataclasses, the document's Rule made by build_graph,
no import pending the facade and private-name rule. (The paths and calls the map names are checked
by tests/test_architecture.py; study/pipeline/'s imports there too.)"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _entry(name: str) -> str:
    """The map's text for one file of recall_kit/study/ (from its line to the next entry's)."""
    found = re.search(rf"^    {re.escape(name)} +(.*?)(?=^    \S)", DOC, re.MULTILINE | re.DOTALL)
    assert found, f"docs/architecture.md: no entry for {name}"
    return " ".join(found.group(1).split())


def _tuple_commands() -> list[str]:
    """The names in cli/__init__.py's one tuple of top-level commands, in its order."""
    tree = ast.parse((ROOT / "recall_kit" / "cli" / "__init__.py").read_text(encoding="utf-8"))
    (loop,) = [node for node in tree.body if isinstance(node, ast.For)]
    assert isinstance(loop.iter, ast.Tuple)
    return [pair.elts[0].value for pair in loop.iter.elts]  # type: ignore[attr-defined]


def _sub_apps() -> list[str]:
    text = (ROOT / "recall_kit" / "cli" / "__init__.py").read_text(encoding="utf-8")
    return re.findall(r'^app\.add_typer\(\w+\.\w+, name="([\w-]+)"\)$', text, re.MULTILINE)


def test_every_host_command_is_in_the_tuple_or_a_sub_app_in_the_tuples_order() -> None:
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""}  # the host alone: no plugin's commands
    shown = subprocess.run([sys.executable, "-m", "recall_kit", "--help"], capture_output=True, text=True,
                           env=env, check=True).stdout
    listed = re.findall(r"^  ([a-z][\w-]*)\s", shown.split("Commands:", 1)[1], re.MULTILINE)
    tuple_names, sub_apps = _tuple_commands(), _sub_apps()
    assert len(tuple_names) >= 10 and sub_apps == ["dataset", "study"]
    assert sorted(listed) == sorted([*tuple_names, *sub_apps])
    assert [name for name in listed if name in tuple_names] == tuple_names
    # and each sub-app's commands are registered by decorator in its module
    for module, name in (("curate", "dataset_app"), ("study", "study_app")):
        text = (ROOT / "recall_kit" / "cli" / f"{module}.py").read_text(encoding="utf-8")
        assert len(re.findall(rf"^@{name}\.command\(", text, re.MULTILINE)) >= 3
    assert "register_commands" in DOC.split("### Commands", 1)[1].split("\n## ", 1)[0]


def test_each_reads_dataclass_is_in_reads_py_or_named_beside_its_step() -> None:
    outside: dict[str, str] = {}
    inside: set[str] = set()
    for path in sorted((ROOT / "recall_kit" / "study").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Reads") and path.name == "reads.py":
                inside.add(node.name)
            elif isinstance(node, ast.ClassDef) and node.name.endswith("Reads"):
                outside[node.name] = path.name
    assert len(inside) >= 10
    entry = _entry("reads.py")
    assert {name: module for name, module in outside.items() if name not in entry or module not in entry} == {}


def test_rules_declares_every_step_but_the_document_which_build_graph_adds(tmp_path: Path) -> None:
    from study.test_run import write_study  # tests/ is on sys.path (conftest.py)

    from recall_kit.study.config import load_study
    from recall_kit.study.steps import build_graph, rules

    config = load_study(write_study(tmp_path))
    assert "document" not in [rule.name for rule in rules(config)]
    assert build_graph(config).steps[-1].name == "document"
    assert "every step but the document" in _entry("steps.py")


def test_no_import_is_pending_the_facade_and_private_name_rule() -> None:
    from test_architecture import FACADE_IMPORTS_PENDING, PRIVATE_IMPORTS_PENDING

    assert "none is pending" in " ".join(DOC.split())
    assert FACADE_IMPORTS_PENDING == {} and PRIVATE_IMPORTS_PENDING == {}
