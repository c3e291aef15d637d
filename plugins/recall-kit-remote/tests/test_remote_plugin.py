"""Installed, the plugin registers its three retrievers; importing it loads neither httpx nor mcp."""

from __future__ import annotations

import subprocess
import sys

from remote_helpers import ROOT, run_cli


def test_plugins_lists_remote_retrievers() -> None:
    result = run_cli("plugins")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("recall-kit-remote"))
    assert all(name in line for name in ("http", "command", "mcp"))


def test_import_is_light() -> None:
    code = "import sys, recall_kit_remote; print(sorted(m for m in ('httpx', 'mcp') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
