"""Option values coerced without pydantic (recall_kit/cli/coercion.py) equal typer's own coercion,
compared on real typer parameters; the typer releases it was written against are pinned."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.main import get_command

from recall_kit.cli.coercion import PlainCoercion, fast_coercion

ROOT = Path(__file__).resolve().parents[2]

CASES: list[tuple[Any, list[Any]]] = [
    (int, ["0", "-3", "12", "007", "+5", " 4", "1_000", "12345678901234567890", "x", "", 5, True, "-0"]),
    (str, ["a", "", " b ", 3]),
    (Path, ["a", "", "/tmp", "-", Path("q")]),
    (bool, [True, False]),
    (list[int], [("1", "2"), ["3", "x"]]),
    (list[Path], [("a", "b")]),
    (list[str], [("a",), ()]),
]


def _parameter(annotation: Any, option: Any = None) -> Any:
    """A real typer parameter of `annotation`, as a command of a typer app holds it."""
    app = typer.Typer(add_completion=False)

    def command(value: Any = None) -> None:
        pass

    # set here, not written: this file's annotations are strings (`from __future__ import annotations`)
    command.__annotations__ = {"value": Annotated[annotation, option or typer.Option()], "return": None}
    app.command()(command)
    (param,) = get_command(app).params
    return param


def _outcome(runtime: Any, param: Any, value: Any) -> tuple[Any, ...]:
    try:
        result = runtime.coerce(value, param=param, ctx=None)
    except Exception as error:  # the error typer raises, compared by kind and message
        return ("error", type(error).__name__, str(error))
    items = result if isinstance(result, (list, tuple)) else [result]
    return ("value", type(result), [(type(item), item) for item in items])


@pytest.mark.parametrize(("annotation", "values"), CASES)
def test_plain_coercion_equals_typers_own(annotation: Any, values: list[Any]) -> None:
    param = _parameter(annotation)
    typers = param.get_runtime_param()
    fast_coercion(param)
    plain = param.get_runtime_param()
    assert isinstance(plain, PlainCoercion)
    for value in [*values, None]:
        assert _outcome(plain, param, value) == _outcome(typers, param, value), value


def test_a_parameter_typer_must_check_or_made_otherwise_keeps_typers_coercion(tmp_path: Path) -> None:
    existing = _parameter(Path, typer.Option(exists=True))
    fast_coercion(existing)
    assert not isinstance(existing.get_runtime_param(), PlainCoercion)
    with pytest.raises(Exception, match="does not exist"):
        existing.get_runtime_param().coerce(str(tmp_path / "gone"), param=existing, ctx=None)
    ranged = _parameter(int, typer.Option(min=1))
    fast_coercion(ranged)
    assert not isinstance(ranged.get_runtime_param(), PlainCoercion)
    # a parameter without the attributes typer 0.29 gives one (a typer that moved them) is left as it is
    import click

    other = click.Option(["--value"], type=int)
    fast_coercion(other)
    assert not hasattr(other, "get_runtime_param")


def test_typer_is_pinned_to_the_releases_the_coercion_was_written_against() -> None:
    # fast_coercion replaces a parameter's `get_runtime_param()` and reads its `type_descriptor`:
    # typer documents neither, so a typer release may move them. Where they are gone every
    # parameter keeps typer's coercion (above); where they stay with another meaning, every command
    # could break. The pin keeps the releases this was checked against, and the installed typer is
    # one of them (when a new typer comes, rerun these tests against it and move the pin).
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (typer_requirement,) = [d for d in dependencies if re.match(r"typer\b", d)]
    found = re.fullmatch(r"typer>=(\d+)\.(\d+),<(\d+)\.(\d+)", typer_requirement)
    assert found, f"typer is not pinned to a range of releases: {typer_requirement}"
    low, high = (int(found[1]), int(found[2])), (int(found[3]), int(found[4]))
    installed = tuple(int(part) for part in importlib.metadata.version("typer").split(".")[:2])
    assert low <= installed < high
    param = _parameter(int)
    assert callable(param.get_runtime_param) and param.type_descriptor.annotation is int


def test_score_does_not_import_pydantic(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    code = (
        "import sys\nfrom recall_kit.cli import main\n"
        f"sys.argv = ['recall-kit', 'score', '--qrels', {str(tmp_path / 'qrels')!r}, '--run', "
        f"{str(tmp_path / 'run')!r}, '-m', 'mrr', '--bootstrap', '10']\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        "print('pydantic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "False"
    assert "mrr" in done.stdout
