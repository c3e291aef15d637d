"""`recall-kit new-plugin`: names, refusals, and a generated package of each kind whose tests pass
(run by a real pytest subprocess, the package not installed, only on the path)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall_kit.cli import app
from recall_kit.scaffold import KINDS, ScaffoldError, create_plugin, plugin_names


@pytest.mark.parametrize(
    ("given", "name", "distribution", "module", "stem"),
    [
        ("tfidf", "tfidf", "recall-kit-tfidf", "recall_kit_tfidf", "Tfidf"),
        ("my-retriever", "my-retriever", "recall-kit-my-retriever", "recall_kit_my_retriever", "MyRetriever"),
        ("recall-kit-bm25x", "bm25x", "recall-kit-bm25x", "recall_kit_bm25x", "Bm25x"),
        ("2stage", "2stage", "recall-kit-2stage", "recall_kit_2stage", "2stage"),
    ],
)
def test_names_derive_from_the_one_given(given, name, distribution, module, stem):
    names = plugin_names(given)
    assert (names.name, names.distribution, names.module, names.class_stem) == (name, distribution, module, stem)


@pytest.mark.parametrize("bad", ["", "Tfidf", "my_thing", "-x", "x-", "a--b", "café", "has space", "../evil", "recall-kit-"])
def test_bad_names_are_refused(bad, tmp_path):
    with pytest.raises(ScaffoldError, match="lowercase letters, digits and single dashes"):
        create_plugin(bad, "retriever", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_unknown_kind_is_refused(tmp_path):
    with pytest.raises(ScaffoldError, match="Unknown plugin kind 'importer'. Available: retriever, fusion, metric, reporter"):
        create_plugin("x", "importer", tmp_path)


def test_an_existing_folder_is_never_overwritten(tmp_path):
    root = create_plugin("mine", "retriever", tmp_path)
    (root / "README.md").write_text("my own notes\n")
    with pytest.raises(ScaffoldError, match="already exists"):
        create_plugin("mine", "metric", tmp_path)
    assert (root / "README.md").read_text() == "my own notes\n"
    (tmp_path / "recall-kit-empty").mkdir()
    with pytest.raises(ScaffoldError, match="already exists"):
        create_plugin("empty", "retriever", tmp_path)
    assert list((tmp_path / "recall-kit-empty").iterdir()) == []


def _run_generated_tests(root: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "RECALL_KIT_LOAD_PLUGINS"}
    # Not installed: the package is importable only from its folder. The generated pyproject's
    # `recall_kit_isolate_plugins = true` keeps this environment's installed plugins out.
    env["PYTHONPATH"] = str(root)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def _passed(output: str) -> int:
    match = re.search(r"(\d+) passed", output)
    return int(match.group(1)) if match else 0


EXPECTED_FILES = {
    "retriever": {"tests/test_conformance.py", "tests/test_recall_kit_demo_retriever.py"},
    "fusion": {"tests/test_recall_kit_demo_fusion.py"},
    "metric": {"tests/test_recall_kit_demo_metric.py"},
    "reporter": {"tests/test_recall_kit_demo_reporter.py"},
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_generates_a_package_whose_tests_pass(kind, tmp_path):
    root = create_plugin(f"demo-{kind}", kind, tmp_path)
    module = f"recall_kit_demo_{kind}"
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert files == {"pyproject.toml", "README.md", f"{module}/__init__.py", f"{module}/py.typed"} | EXPECTED_FILES[kind]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["project"]["name"] == f"recall-kit-demo-{kind}"
    assert project["project"]["entry-points"]["recall_kit"] == {f"demo-{kind}": module}
    assert "recall-kit>=0.1" in project["project"]["dependencies"]
    assert f"register_{kind}s" in (root / module / "__init__.py").read_text()
    readme = (root / "README.md").read_text()
    assert "## Publish" in readme and f"recall-kit-demo-{kind}" in readme

    completed = _run_generated_tests(root)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert "failed" not in completed.stdout and "error" not in completed.stdout.lower()
    # The retriever's own 4 tests and the 24 conformance checks; the others' own tests.
    assert _passed(completed.stdout) == {"retriever": 28, "fusion": 4, "metric": 3, "reporter": 2}[kind]


def test_the_generated_tests_catch_a_broken_retriever(tmp_path):
    root = create_plugin("broken", "retriever", tmp_path)
    module = root / "recall_kit_broken" / "__init__.py"
    # Ignore k: the conformance suite (and the package's own test) must notice.
    module.write_text(module.read_text().replace("return sort_hits(hits)[:k]", "return sort_hits(hits)"))
    completed = _run_generated_tests(root)
    assert completed.returncode == 1
    assert "test_k_one" in completed.stdout and "returned" in completed.stdout


def test_cli_new_plugin_writes_and_refuses_in_one_line(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["new-plugin", "tsv", "--kind", "reporter", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"Created {tmp_path / 'recall-kit-tsv'}" in result.output
    assert (tmp_path / "recall-kit-tsv" / "recall_kit_tsv" / "__init__.py").exists()

    again = runner.invoke(app, ["new-plugin", "tsv", "--dir", str(tmp_path)])
    assert again.exit_code == 2
    assert again.output.strip().splitlines() == [
        f"Error: {tmp_path / 'recall-kit-tsv'} already exists; choose another name or --dir (nothing was written)."
    ]
    bad = runner.invoke(app, ["new-plugin", "My_Plugin", "--dir", str(tmp_path)])
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1
    assert "Bad plugin name 'My_Plugin'" in bad.output
