"""rrf and convex against ranx's fusion (an independent implementation) on random runs.

ranx's definitions (read from its source): `rrf` scores 1 / (k + i + 1) for the i-th document
(0-based) of each run, no weights, and sums (comb_sum); `wsum` sums weights[i] * score, a missing
document counting 0; `min-max` is (s - min) / max(max - min, 1e-9); `rank` is 1 - i / n; `max`
is s / max(max, 1e-9). The runs below have distinct scores and at least two hits per leg, where
the definitions coincide (ours differ only for all-equal scores: see convex.normalise).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_test_helpers import make_request
from recall_kit_fusion.convex import ConvexFusion
from recall_kit_fusion.rrf import ReciprocalRankFusion

from recall_kit import Hit, sort_hits

if importlib.util.find_spec("ranx") is None:  # imported only by the no-JIT subprocess
    pytest.skip("ranx is not installed", allow_module_level=True)

QUERIES = 40


def random_runs(seed: int, legs: int) -> list[dict[str, dict[str, float]]]:
    """One {query: {doc: score}} per leg: 2..25 distinct docs of 40, distinct non-negative scores."""
    rng = random.Random(seed)
    runs: list[dict[str, dict[str, float]]] = [{} for _ in range(legs)]
    for query in range(QUERIES):
        for run in runs:
            docs = rng.sample([f"d{i:02d}" for i in range(40)], rng.randint(2, 25))
            run[f"q{query:02d}"] = {doc: rng.uniform(0.0, 30.0) for doc in docs}
    return runs


def ours(fusion, runs, weights: list[float]) -> dict[str, list[Hit]]:
    fused = {}
    for query in runs[0]:
        legs = {f"leg{i}": sort_hits([Hit(d, s) for d, s in run[query].items()]) for i, run in enumerate(runs)}
        names = {f"leg{i}": w for i, w in enumerate(weights)}
        fused[query] = fusion.fuse(make_request(legs, names, k=1000))
    return fused


def ranx_fuse_cases(cases: list[dict]) -> list[dict[str, dict[str, float]]]:
    """ranx's `fuse` on each case ({"runs", "norm", "method", "params"}), all in one subprocess with
    numba's JIT off (ranx_fuse_nojit.py says why): one fused {query: {doc: score}} per case."""
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("ranx_fuse_nojit.py"))],
                          input=json.dumps({"cases": cases}), capture_output=True, text=True, timeout=600,
                          check=False, env={**os.environ, "NUMBA_DISABLE_JIT": "1"})
    assert done.returncode == 0, done.stderr
    fused = json.loads(done.stdout)
    assert len(fused) == len(cases)
    return fused


def assert_same(mine: dict[str, list[Hit]], theirs: dict[str, dict[str, float]]) -> None:
    assert set(mine) == set(theirs)
    for query, hits in mine.items():
        assert {hit.id: hit.score for hit in hits} == pytest.approx(theirs[query], rel=1e-9, abs=1e-12)
        # Same ranking once float noise in the last bits is rounded away (ties by id as trec_eval).
        expected = sort_hits([Hit(doc, round(score, 10)) for doc, score in theirs[query].items()])
        got = sort_hits([Hit(hit.id, round(hit.score, 10)) for hit in hits])
        assert [hit.id for hit in got] == [hit.id for hit in expected]


RRF_RUNS = {legs: random_runs(seed=legs, legs=legs) for legs in (2, 3)}
WEIGHTED_RRF_RUNS = random_runs(seed=7, legs=2)
CONVEX_RUNS = random_runs(seed=11, legs=3)
CONVEX_WEIGHTS = [1.0, 0.6, 0.25]
NORMS = {"minmax": "min-max", "rank": "rank", "max": "max"}
# ranx's rrf has no weights; an integer weight w is the same run given w times.
CASES = {
    **{("rrf", legs): {"runs": runs, "norm": None, "method": "rrf", "params": {"k": 60}}
       for legs, runs in RRF_RUNS.items()},
    ("weighted rrf",): {"runs": [WEIGHTED_RRF_RUNS[0], WEIGHTED_RRF_RUNS[0], WEIGHTED_RRF_RUNS[1]], "norm": None,
                        "method": "rrf", "params": {"k": 10}},
    **{("wsum", norm): {"runs": CONVEX_RUNS, "norm": ranx_norm, "method": "wsum",
                        "params": {"weights": CONVEX_WEIGHTS}} for norm, ranx_norm in NORMS.items()},
}


@pytest.fixture(scope="module")
def ranx_fused() -> dict[tuple, dict[str, dict[str, float]]]:
    return dict(zip(CASES, ranx_fuse_cases(list(CASES.values())), strict=True))


@pytest.mark.parametrize("legs", [2, 3])
def test_rrf_matches_ranx(legs, ranx_fused):
    assert_same(ours(ReciprocalRankFusion(), RRF_RUNS[legs], [1.0] * legs), ranx_fused["rrf", legs])


def test_weighted_rrf_matches_ranx_with_repeated_runs(ranx_fused):
    assert_same(ours(ReciprocalRankFusion(ReciprocalRankFusion.Options(k=10)), WEIGHTED_RRF_RUNS, [2.0, 1.0]),
                ranx_fused[("weighted rrf",)])


@pytest.mark.parametrize("norm", list(NORMS))
def test_convex_matches_ranx_wsum(norm, ranx_fused):
    assert_same(ours(ConvexFusion(ConvexFusion.Options(norm=norm)), CONVEX_RUNS, CONVEX_WEIGHTS),  # type: ignore[arg-type]
                ranx_fused["wsum", norm])
