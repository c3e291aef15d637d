"""End to end: `python -m recall_kit eval --retriever fts5` and `plugins` as real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit import load_result

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
    data = load_result(out)  # refuses any other schema than recall-kit/result/1
    assert set(data.strata) == {"exact", "paraphrase", "multihop"}
    assert data.stratum_size("exact") > 0
    assert data.system.legs[0].options["mode"] == mode
    leg = data.index.legs["fts5"]
    assert leg.size_bytes is not None and leg.size_bytes > 0
    assert leg.stats["rows"] > 0 and leg.stats["mode"] == mode
    # Exact-wording queries share words with their memories: a lexical retriever finds them.
    assert data.mean("recall@10", "exact") > 0.5


def test_disk_index_reused_across_runs(tmp_path: Path) -> None:
    index = tmp_path / "fts5_cli_index.sqlite"
    outputs = []
    for run in range(2):
        out = tmp_path / f"fts5_cli_disk_{run}.json"
        result = run_cli("eval", "--dataset", str(DATASET), "--retriever", "fts5",
                         "-o", f"fts5.path={index}", "--json", str(out))
        assert result.returncode == 0, result.stderr
        outputs.append(load_result(out))
    assert outputs[0].index.legs["fts5"].stats["reused_from_disk"] is False
    assert outputs[1].index.legs["fts5"].stats["reused_from_disk"] is True
    assert outputs[0].rankings() == outputs[1].rankings()
