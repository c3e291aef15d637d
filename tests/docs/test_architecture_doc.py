"""docs/architecture.md's claims about where things live, checked against the code: the three ways a
command is registered, the study steps' Reads dataclasses beside their steps, the document's Rule last in `rules`, the
worked example of a step,
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


def _entry(name: str, indent: int = 4) -> str:
    """The map's text for one file of recall_kit/study/ (from its line to the next entry's); `indent` 6:
    one of its sub-folders (the first entry of that name)."""
    pad = " " * indent
    found = re.search(rf"^{pad}{re.escape(name)} +(.*?)(?=^ {{4,{indent}}}\S)", DOC, re.MULTILINE | re.DOTALL)
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


def test_each_reads_dataclass_is_in_its_steps_module_or_the_shared_one_the_map_names() -> None:
    # a step's reads live with it (study/steps/<step>.py); those several steps read, in common.py
    import importlib

    from recall_kit.study.steps import STEPS

    found: dict[str, str] = {}
    for path in sorted((ROOT / "recall_kit" / "study").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Reads"):
                found[node.name] = path.relative_to(ROOT / "recall_kit" / "study").as_posix()
    assert len(found) >= 10
    assert {name for name, where in found.items() if not where.startswith("steps/")} == set()
    for module in STEPS:
        kind = module.RULE.kind
        assert kind.__module__ in (module.__name__, "recall_kit.study.steps.common"), (module.__name__, kind)
    shared = {name for name, where in found.items() if where == "steps/common.py"}
    assert shared and all(name in _entry("common.py", indent=6) for name in shared)
    assert importlib.import_module("recall_kit.study.steps.common").RunReads.__name__ in shared


def test_rules_declares_every_step_the_document_last(tmp_path: Path) -> None:
    from study.test_run import write_study  # tests/ is on sys.path (conftest.py)

    from recall_kit.study.config import load_study
    from recall_kit.study.steps import build_graph, rules

    config = load_study(write_study(tmp_path))
    names = [rule.name for rule in rules(config)]
    assert names[-1] == "document" and [step.name for step in build_graph(config).steps] == names
    assert "the document's last" in _entry("__init__.py", indent=6)


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_worked_example_of_a_step_is_the_smallest_steps_module_whole() -> None:
    # "Adding a study step" shows lint.py whole but for its docstring and imports; it is the smallest step
    section = DOC.split("## Adding a study step", 1)[1].split("\n## ", 1)[0]
    (shown,) = _code_blocks(section)
    source = (ROOT / "recall_kit" / "study" / "steps" / "lint.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    body = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr))]
    lines = source.splitlines()
    start = min([body[0].lineno, *(d.lineno for d in getattr(body[0], "decorator_list", []))])
    assert shown.strip() == "\n".join(lines[start - 1:]).strip()
    steps = ROOT / "recall_kit" / "study" / "steps"
    whole = {path.name: len(text.splitlines()) for path in steps.glob("*.py")
             for text in [path.read_text(encoding="utf-8")]
             if "@dataclass(frozen=True)" in text and "\ndef make_" in text and "_command(" in text and "\nRULE = " in text}
    assert len(whole) >= 5 and min(whole, key=lambda name: whole[name]) == "lint.py"


def test_no_import_is_pending_the_facade_and_private_name_rule() -> None:
    from test_architecture import FACADE_IMPORTS_PENDING, PRIVATE_IMPORTS_PENDING

    assert "none is pending" in " ".join(DOC.split())
    assert FACADE_IMPORTS_PENDING == {} and PRIVATE_IMPORTS_PENDING == {}
