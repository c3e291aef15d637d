"""Tests are laid out like the code: each module of recall_kit/ has its test file at the mirrored
path (recall_kit/measure/run/runner.py -> tests/measure/run/test_runner.py; a package's
`__init__.py` -> tests/<package>/test_<package>.py), or a line in tests/index.toml naming the test
files that cover it. A module that holds nothing but its docstring needs neither."""

from __future__ import annotations

import ast
import fnmatch
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "tests" / "index.toml"


def mirrored_test(module: Path) -> Path:
    """Where `module`'s own test file lives (a path under tests/)."""
    relative = module.relative_to(ROOT / "recall_kit")
    if relative.name == "__init__.py":
        folder = relative.parent
        name = folder.name or "recall_kit"
        return ROOT / "tests" / folder / f"test_{name}.py"
    return ROOT / "tests" / relative.parent / f"test_{relative.stem}.py"


def host_modules() -> list[Path]:
    """Every module of recall_kit/ with code beyond its docstring (the scaffold's templates are
    package data, checked by tests/test_scaffold.py)."""
    modules = []
    for path in sorted((ROOT / "recall_kit").rglob("*.py")):
        if "templates" in path.relative_to(ROOT / "recall_kit").parts:
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if body:
            modules.append(path)
    return modules


def index() -> dict[str, list[str]]:
    return tomllib.loads(INDEX.read_text(encoding="utf-8"))["covered_by"]


def indexed(module: str, entries: dict[str, list[str]]) -> bool:
    return any(fnmatch.fnmatch(module, pattern) for pattern in entries)


def test_every_host_module_has_its_test_file_or_an_index_line():
    entries = index()
    missing = [path.relative_to(ROOT).as_posix() for path in host_modules()
               if not mirrored_test(path).exists() and not indexed(path.relative_to(ROOT).as_posix(), entries)]
    assert not missing, ("no tests/ mirror and no line in tests/index.toml for: " + ", ".join(missing))


def test_every_index_line_is_needed_and_names_real_test_files():
    modules = {path.relative_to(ROOT).as_posix(): path for path in host_modules()}
    for pattern, test_files in index().items():
        matched = [module for module in modules if fnmatch.fnmatch(module, pattern)]
        assert matched, f"tests/index.toml: {pattern} matches no module of recall_kit/ (any more)"
        assert not all(mirrored_test(modules[module]).exists() for module in matched), (
            f"tests/index.toml: every module {pattern} matches has its mirrored test file now; drop its line")
        assert test_files, f"tests/index.toml: {pattern} names no test file"
        for test_file in test_files:
            assert (ROOT / test_file).is_file(), f"tests/index.toml: {pattern}: no file {test_file}"


def dotted(module: str) -> str:
    """`recall_kit/study/steps.py` -> `recall_kit.study.steps` (a package's `__init__.py`: the package)."""
    return module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_study_and_label_modules_are_each_named_by_the_test_files_that_cover_them():
    # A glob there would let a new study module in without a test; a file covering several modules
    # names each (imports it or says its dotted name).
    for pattern, test_files in index().items():
        if not pattern.startswith(("recall_kit/study/", "recall_kit/label/")):
            continue
        assert not any(c in pattern for c in "*?["), f"tests/index.toml: {pattern}: name each study/label module"
        for test_file in test_files:
            text = (ROOT / test_file).read_text(encoding="utf-8")
            assert re.search(rf"\b{re.escape(dotted(pattern))}(?!\.?\w)", text), (
                f"tests/index.toml: {pattern} -> {test_file}, which does not name {dotted(pattern)}")


def test_the_mirror_rule():
    # Not vacuous: the rule maps a module, a package and the root package where the layout puts them.
    assert mirrored_test(ROOT / "recall_kit/measure/run/runner.py") == ROOT / "tests/measure/run/test_runner.py"
    assert mirrored_test(ROOT / "recall_kit/cli/__init__.py") == ROOT / "tests/cli/test_cli.py"
    assert mirrored_test(ROOT / "recall_kit/__init__.py") == ROOT / "tests/test_recall_kit.py"
    assert ROOT / "recall_kit/measure/run/runner.py" in host_modules()
    assert ROOT / "recall_kit/measure/systems/__init__.py" not in host_modules()  # a docstring alone
