"""End to end: `python -m recall_kit eval --retriever bm25` and `plugins` as real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from recall_kit import load_result

ROOT = Path(__file__).resolve().parents[3]
DATASET = ROOT / "examples" / "memories"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-bm25")
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_plugins_lists_bm25() -> None:
    result = run_cli("plugins")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("recall-kit-bm25"))
    assert "bm25" in line.split("recall-kit-bm25", 1)[1]


def test_eval_bm25_writes_a_result_and_prints_strata(tmp_path: Path) -> None:
    out = tmp_path / "bm25_cli_result.json"
    result = run_cli("eval", "--dataset", str(DATASET), "--retriever", "bm25",
                     "-o", "bm25.variant=bm25plus", "--json", str(out))
    assert result.returncode == 0, result.stderr
    for stratum in ("overall", "exact", "paraphrase", "multihop"):
        assert stratum in result.stdout
    data = load_result(out)  # refuses any other schema than recall-kit/result/1
    assert set(data.strata) == {"exact", "paraphrase", "multihop"}
    assert data.stratum_size("exact") > 0 and 0 <= data.mean("recall@10", "exact") <= 1
    assert data.system.legs[0].options["variant"] == "bm25plus"
    leg = data.index.legs["bm25"]
    assert leg.size_bytes is not None and leg.size_bytes > 0 and leg.stats["documents"] > 0
    # Exact-wording queries share words with their memories: a lexical retriever finds them.
    assert data.mean("recall@10", "exact") > 0.5


def test_bad_option_is_one_line() -> None:
    result = run_cli("eval", "--dataset", str(DATASET), "--retriever", "bm25",
                     "-o", "bm25.variant=nope")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "variant" in (result.stderr + result.stdout)
