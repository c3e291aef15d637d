"""`recall-kit gate`: exit 0 / 1 / 2, absolute and relative drops, --significant, latency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from recall_kit.decide.gate import run_gate
from recall_kit.measure.result import SCHEMA

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "memories"


def write_result(path: Path, values: list[float], latency_p95: float = 10.0, metric: str = "recall@10") -> Path:
    n = len(values)
    queries = [{"query_id": f"q{i:03d}", "stratum": "exact" if i % 2 else "paraphrase", "ranking": [],
                "scores": [], "metrics": {metric: v}, "found_by": {}} for i, v in enumerate(values)]
    data = {
        "schema": SCHEMA, "system": {"spec": path.stem, "label": path.stem}, "k": 10,
        "dataset": {"name": "synthetic", "fingerprint": "fp", "path": "nowhere"},
        "metrics": {"names": [metric], "overall": {metric: float(np.mean(values)), "n": n}, "strata": {}},
        "queries": queries, "warnings": [],
        "latency_ms": {"n": n, "p50": latency_p95 / 2, "p95": latency_p95, "p99": latency_p95, "mean": 1.0},
        "manifest": {"platform": "same"},
    }
    path.write_text(json.dumps(data))
    return path


def _gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recall_kit", "gate", *args], check=False, cwd=ROOT,
                          env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""}, capture_output=True, text=True,
                          timeout=120)


def test_absolute_and_relative_drops(tmp_path):
    # Baseline 0.5 on every query; current 0.47: an absolute drop of 0.03, a relative one of 6%.
    base = write_result(tmp_path / "base.json", [0.5] * 40)
    cur = write_result(tmp_path / "cur.json", [0.47] * 40)
    outcome = run_gate(base, cur, max_drop=0.02, n_resamples=500)
    assert not outcome.passed
    (check,) = outcome.regressions
    # change = current - accepted, as compare's delta: a drop is negative.
    assert check.change == pytest.approx(-0.03)
    assert check.change == pytest.approx(outcome.comparison.row("cur", "recall@10").delta)
    assert "change = current - accepted" in outcome.report().tables[0].notes[0]
    assert run_gate(base, cur, max_drop=0.05, n_resamples=500).passed
    relative = run_gate(base, cur, max_drop=0.05, relative=True, n_resamples=500)
    assert relative.checks[0].change == pytest.approx(-0.06) and not relative.passed
    assert run_gate(base, cur, max_drop=0.07, relative=True, n_resamples=500).passed


def test_significant_passes_a_drop_the_test_does_not_support(tmp_path):
    # One query of forty drops from 1 to 0: mean drop 0.025 > 0.02, but a single loss is noise
    # (exact p would be 1/2 for one non-zero difference: sign flips of one value).
    base = write_result(tmp_path / "base.json", [1.0] * 40)
    cur = write_result(tmp_path / "cur.json", [0.0] + [1.0] * 39)
    assert not run_gate(base, cur, max_drop=0.02, n_resamples=2000).passed
    lenient = run_gate(base, cur, max_drop=0.02, significant=True, n_resamples=2000)
    assert lenient.passed and lenient.checks[0].note == "drop not significant"
    tested = sum(1 for check in lenient.checks if check.p_holm is not None)
    assert tested >= 1 and any(f"Holm-adjusted over the {tested} gated rows (one family)" in note
                               for table in lenient.report().tables for note in table.notes)
    # Every query dropping is supported by the test: --significant still fails it.
    worse = write_result(tmp_path / "worse.json", [0.9] * 40)
    assert not run_gate(base, worse, max_drop=0.02, significant=True, n_resamples=2000).passed


def test_cli_exit_codes_and_latency(tmp_path):
    base = write_result(tmp_path / "base.json", [0.5] * 40, latency_p95=10.0)
    same = write_result(tmp_path / "same.json", [0.5] * 40, latency_p95=11.0)
    slow = write_result(tmp_path / "slow.json", [0.5] * 40, latency_p95=13.0)
    worse = write_result(tmp_path / "worse.json", [0.4] * 40)
    assert _gate("--accepted", str(base), "--current", str(same), "--latency-max-rise", "0.2").returncode == 0
    done = _gate("--accepted", str(base), "--current", str(slow), "--latency-max-rise", "0.2")
    assert done.returncode == 1 and "Regressions" in done.stdout and "latency p95 ms" in done.stdout
    # The rise as a percentage of the baseline and the latencies in ms (was "+0.3000" and "10.0000").
    latency_row = next(line for line in done.stdout.splitlines() if line.startswith("latency p95 ms"))
    assert latency_row.split()[4:8] == ["10.00", "13.00", "+30.0%", "20.0%"]
    done = _gate("--accepted", str(base), "--current", str(worse), "--resamples", "500")
    assert done.returncode == 1 and "REGRESSED" in done.stdout
    done = _gate("--accepted", str(base), "--current", str(tmp_path / "missing.json"))
    assert done.returncode == 2 and "no such result file" in done.stderr
    done = _gate("--accepted", str(base), "--current", str(worse), "--max-drop", "-1")
    assert done.returncode == 2 and "--max-drop" in done.stderr


def test_gate_end_to_end_on_the_example(tmp_path):
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-bm25"}
    paths = {}
    for name, extra in (("plain", []), ("stem", ["-o", "bm25.stemming=true", "-o", "bm25.stopwords=true"])):
        paths[name] = tmp_path / f"{name}.json"
        done = subprocess.run([sys.executable, "-m", "recall_kit", "eval", "-d", str(EXAMPLE), "-r", "bm25", *extra,
                               "-m", "recall@10", "--json", str(paths[name]), "--latency-sample", "0"],
                              check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    # The stemmed system is the better one: gating it against the plain one passes ...
    assert _gate("--accepted", str(paths["plain"]), "--current", str(paths["stem"])).returncode == 0
    # ... and the other way round it is a regression of recall@10 beyond 0.02.
    done = _gate("--accepted", str(paths["stem"]), "--current", str(paths["plain"]), "--resamples", "2000")
    assert done.returncode == 1 and "recall@10" in done.stdout
