"""The Makefile, as a user sees it run: no comment echoed as if it were a command (issue 70: a
fresh clone's `make demo` printed the set-up recipe's comment lines)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("target", ["demo", "test", "wheels", "lint"])
def test_no_recipe_echoes_a_comment(target: str) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # -n prints every command a target would run, -B as on a fresh clone (nothing built yet)
    done = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    echoed = [line for line in done.stdout.splitlines() if line.lstrip().startswith("#")]
    assert echoed == [], echoed
    assert "recall-kit" in done.stdout or "pytest" in done.stdout or "pip" in done.stdout
