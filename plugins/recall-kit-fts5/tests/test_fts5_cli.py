"""End to end: `python -m recall_kit eval --retriever fts5` and `plugins` as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATASET = ROOT / "examples" / "memories"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-fts5")
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_plugins_lists_fts5() -> None:
    result = run_cli("plugins")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("recall-kit-fts5"))
    assert "fts5" in line.split("recall-kit-fts5", 1)[1]


@pytest.mark.parametrize("mode", ["bm25", "production"])
def test_eval_fts5_writes_a_result_and_prints_strata(tmp_path: Path, mode: str) -> None:
    out = tmp_path / f"fts5_cli_result_{mode}.json"
    result = run_cli("eval", "--dataset", str(DATASET), "--retriever", "fts5",
                     "-o", f"fts5.mode={mode}", "--json", str(out))
    assert result.returncode == 0, result.stderr
    for stratum in ("overall", "exact", "paraphrase", "multihop"):
        assert stratum in result.stdout
    data = json.loads(out.read_text())
    assert data["schema"] == "recall-kit/result/1"
    strata = data["metrics"]["strata"]
    assert set(strata) == {"exact", "paraphrase", "multihop"}
    assert strata["exact"]["n"] > 0
    assert data["system"]["legs"][0]["options"]["mode"] == mode
    leg = data["index"]["legs"]["fts5"]
    assert leg["size_bytes"] > 0 and leg["rows"] > 0 and leg["mode"] == mode
    # Exact-wording queries share words with their memories: a lexical retriever finds them.
    assert strata["exact"]["recall@10"] > 0.5


def test_disk_index_reused_across_runs(tmp_path: Path) -> None:
    index = tmp_path / "fts5_cli_index.sqlite"
    outputs = []
    for run in range(2):
        out = tmp_path / f"fts5_cli_disk_{run}.json"
        result = run_cli("eval", "--dataset", str(DATASET), "--retriever", "fts5",
                         "-o", f"fts5.path={index}", "--json", str(out))
        assert result.returncode == 0, result.stderr
        outputs.append(json.loads(out.read_text()))
    assert outputs[0]["index"]["legs"]["fts5"]["reused_from_disk"] is False
    assert outputs[1]["index"]["legs"]["fts5"]["reused_from_disk"] is True
    assert [q["ranking"] for q in outputs[0]["queries"]] == [q["ranking"] for q in outputs[1]["queries"]]
