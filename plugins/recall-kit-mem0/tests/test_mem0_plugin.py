"""Installed, the plugin registers `mem0`; importing it loads neither mem0 nor torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_plugins_lists_mem0() -> None:
    env = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-mem0")
    result = subprocess.run([sys.executable, "-m", "recall_kit", "plugins"], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("recall-kit-mem0"))
    assert "mem0" in line.split("recall-kit-mem0", 1)[1]


def test_import_is_light() -> None:
    code = "import sys, recall_kit_mem0; print(sorted(m for m in ('mem0', 'torch') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
