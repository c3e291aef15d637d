"""Option values coerced without pydantic (recall_kit/cli/coercion.py) equal typer's own coercion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer._coercion import build_runtime_param, resolve_type_descriptor
from typer.models import OptionInfo

from recall_kit.cli.coercion import _PlainRuntimeParam

CASES: list[tuple[Any, list[Any]]] = [
    (int, ["0", "-3", "12", "007", "+5", " 4", "1_000", "12345678901234567890", "x", "", 5, True, "-0"]),
    (str, ["a", "", " b ", 3]),
    (Path, ["a", "", "/tmp", "-", Path("q")]),
    (bool, [True, False]),
    (list[int], [("1", "2"), ["3", "x"]]),
    (list[Path], [("a", "b")]),
    (list[str], [("a",), ()]),
]


def _outcome(runtime: Any, value: Any) -> tuple[Any, ...]:
    try:
        result = runtime._coerce_value(value, param=None, ctx=None)
    except Exception as error:  # the error typer raises, compared by kind and message
        return ("error", type(error).__name__, str(error))
    items = result if isinstance(result, list) else [result]
    return ("value", type(result), [(type(item), item) for item in items])


@pytest.mark.parametrize(("annotation", "values"), CASES)
def test_plain_coercion_equals_typers_adapter(annotation: Any, values: list[Any]) -> None:
    descriptor = resolve_type_descriptor(annotation, OptionInfo())
    typers = build_runtime_param(descriptor)
    plain = _PlainRuntimeParam(descriptor.parameter_info, annotation, descriptor)
    for value in values:
        assert _outcome(plain, value) == _outcome(typers, value), value


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
