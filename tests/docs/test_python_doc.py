"""docs/python.md runs as written: its Python block is executed in a real interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python.md"


def test_python_page_runs_as_written():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert blocks, "docs/python.md has no python block"
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-fts5,recall-kit-bm25,recall-kit-fusion"}
    done = subprocess.run([sys.executable, "-c", "\n".join(blocks)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "recall@5" in done.stdout and "gate" in done.stdout
