"""The root conftest's order for `--dist loadgroup`: the longest work is handed out first (the units
a worker runs whole holding the most `slow` tests, then the largest), and xdist keeps that order
rather than its own (groups by number of tests, then every test of no group)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = """
import os

import pytest


def _ran(name):
    with open(os.environ["ORDER_FILE"], "a") as order:
        order.write(name + "\\n")
"""

#: Three modules: a test alone and a module of five sharing a module fixture (one group); a slow
#: test alone; a group of two slow tests.
MODULES = {
    "test_a.py": HEADER + """
@pytest.fixture(scope="module")
def shared():
    return 1


def test_fast_alone():
    _ran("fast_alone")


@pytest.mark.parametrize("n", range(5))
def test_in_a_large_fast_module(shared, n):
    _ran(f"large_fast_{n}")
""",
    "test_b.py": HEADER + """
@pytest.mark.slow
def test_slow_alone():
    _ran("slow_alone")
""",
    "test_c.py": HEADER + """
@pytest.mark.slow
@pytest.mark.xdist_group("two-slow")
@pytest.mark.parametrize("n", range(2))
def test_in_a_small_slow_group(n):
    _ran(f"small_slow_{n}")
""",
}


def test_the_units_holding_the_most_slow_tests_go_first_then_the_largest(tmp_path: Path) -> None:
    shutil.copy2(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n", encoding="utf-8")
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    order = tmp_path / "order.txt"
    # One worker runs the units in the order the controller hands them out.
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "1", "--dist", "loadgroup", "-p", "no:randomly",
                           "-p", "no:cacheprovider", "-q", *MODULES], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "ORDER_FILE": str(order)}, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = order.read_text(encoding="utf-8").split()
    # the group of two slow tests, the slow test alone, the module of five (one group: its fixture),
    # then the fast test alone (xdist's own order would start with the five).
    assert ran == ["small_slow_0", "small_slow_1", "slow_alone", *[f"large_fast_{n}" for n in range(5)], "fast_alone"]
