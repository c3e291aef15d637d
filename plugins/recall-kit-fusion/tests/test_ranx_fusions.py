"""The Comb* family, Borda and ISR / log-ISR against ranx's `fuse` (an independent implementation)
on the same random runs: same fused scores (to 1e-6 and tighter) and the same ranking.

ranx's definitions (read from its source, ranx/fusion/*.py): CombSUM sums the normalised scores of
the runs that hold a document, CombMNZ multiplies that sum by how many runs hold it, CombANZ
divides it by that number, CombMAX / CombMIN take the largest / smallest of them; BordaFuse gives
n - i points to the i-th document (0-based) of a run over n candidates (the union of the runs) and
(n - |run| + 1) / 2 to a candidate the run lacks, then sums; ISR is CombMNZ of 1 / rank^2 and
log-ISR multiplies the sum of 1 / rank^2 by ln(count). Weight 1 everywhere: ranx's methods have
no weights. The runs have distinct scores and at least two hits per leg, where min-max agrees
with ours (see convex.normalise for the all-equal case).
"""

from __future__ import annotations

import importlib.util

import pytest
from fusion_test_helpers import make_request
from recall_kit_fusion.borda import BordaFuse
from recall_kit_fusion.combanz import CombAnz
from recall_kit_fusion.combmax import CombMax
from recall_kit_fusion.combmin import CombMin
from recall_kit_fusion.combmnz import CombMnz
from recall_kit_fusion.combsum import CombSum
from recall_kit_fusion.isr import InverseSquareRank
from recall_kit_fusion.log_isr import LogInverseSquareRank
from test_ranx_crosscheck import assert_same, ours, random_runs, ranx_fuse_cases

from recall_kit.plugin import Hit

if importlib.util.find_spec("ranx") is None:  # imported only by the no-JIT subprocess
    pytest.skip("ranx is not installed", allow_module_level=True)

SCORE_FUSIONS = [(CombSum, "sum"), (CombMnz, "mnz"), (CombMax, "max"), (CombMin, "min"),
                 (CombAnz, "anz")]
RANK_FUSIONS = [(BordaFuse, "bordafuse"), (InverseSquareRank, "isr"), (LogInverseSquareRank, "log_isr")]


def sorted_runs(runs):
    """Each query's documents inserted best first: ranx's rank-based methods read that order."""
    return [{q: dict(sorted(docs.items(), key=lambda item: -item[1])) for q, docs in run.items()} for run in runs]


SCORE_RUNS = sorted_runs(random_runs(seed=21, legs=3))
RANK_RUNS = {legs: sorted_runs(random_runs(seed=30 + legs, legs=legs)) for legs in (2, 4)}
CASES = ([(method, "min-max", SCORE_RUNS) for _, method in SCORE_FUSIONS]
         + [(method, None, RANK_RUNS[legs]) for _, method in RANK_FUSIONS for legs in (2, 4)])


@pytest.fixture(scope="module")
def ranx_fused() -> dict[tuple[str, int], dict[str, dict[str, float]]]:
    """(method, legs) -> ranx's fused run, every case computed in one subprocess."""
    fused = ranx_fuse_cases([{"runs": runs, "norm": norm, "method": method} for method, norm, runs in CASES])
    return {(method, len(runs)): one for (method, _, runs), one in zip(CASES, fused, strict=True)}


@pytest.mark.parametrize(("fusion", "method"), SCORE_FUSIONS)
def test_score_fusions_match_ranx(fusion, method, ranx_fused):
    assert_same(ours(fusion(), SCORE_RUNS, [1.0] * 3), ranx_fused[method, 3])


@pytest.mark.parametrize(("fusion", "method"), RANK_FUSIONS)
@pytest.mark.parametrize("legs", [2, 4])
def test_rank_fusions_match_ranx(fusion, method, legs, ranx_fused):
    assert_same(ours(fusion(), RANK_RUNS[legs], [1.0] * legs), ranx_fused[method, legs])


def test_by_hand():
    legs = {"a": [Hit("x", 3.0), Hit("y", 2.0), Hit("z", 1.0)], "b": [Hit("y", 9.0), Hit("w", 1.0)]}
    # min-max: a: x 1, y 0.5, z 0; b: y 1, w 0.
    request = make_request(legs)
    assert {h.id: h.score for h in CombSum().fuse(request)} == {"x": 1.0, "y": 1.5, "z": 0.0, "w": 0.0}
    assert {h.id: h.score for h in CombMnz().fuse(request)}["y"] == 3.0
    assert {h.id: h.score for h in CombMax().fuse(request)}["y"] == 1.0
    assert {h.id: h.score for h in CombMin().fuse(request)}["y"] == 0.5
    assert {h.id: h.score for h in CombAnz().fuse(request)}["y"] == 0.75
    # Borda over n = 4 candidates: a gives x 4, y 3, z 2, w (4-3+1)/2 = 1; b gives y 4, w 3, x and z 1.5.
    assert {h.id: h.score for h in BordaFuse().fuse(request)} == {"x": 5.5, "y": 7.0, "z": 3.5, "w": 4.0}
    # ISR: y = 2 x (1/4 + 1/1) = 2.5; x = 1 x 1; log-ISR: y = ln 2 x 1.25, x = 0.
    isr = {h.id: h.score for h in InverseSquareRank().fuse(request)}
    assert isr["y"] == pytest.approx(2.5) and isr["x"] == 1.0
    log_isr = {h.id: h.score for h in LogInverseSquareRank().fuse(request)}
    assert log_isr["y"] == pytest.approx(1.25 * 0.6931471805599453) and log_isr["x"] == 0.0


def test_weights_multiply_a_legs_values():
    legs = {"a": [Hit("x", 3.0), Hit("y", 1.0)], "b": [Hit("y", 2.0), Hit("x", 1.0)]}
    fused = CombSum().fuse(make_request(legs, {"a": 1.0, "b": 0.5}))
    assert {h.id: h.score for h in fused} == {"x": 1.0, "y": 0.5}


def test_options_through_the_host():
    from recall_kit.plugin import OptionError, build_options

    assert build_options("fusion 'combsum'", CombSum.Options, {"norm": "rank", "depth": "20"}) == CombSum.Options(
        norm="rank", depth=20)
    assert build_options("fusion 'borda'", BordaFuse.Options, {"depth": "5"}).depth == 5
    with pytest.raises(OptionError, match="depth must be >= 1"):
        build_options("fusion 'isr'", InverseSquareRank.Options, {"depth": "0"})
    with pytest.raises(OptionError, match="Unknown option 'norm'"):
        build_options("fusion 'isr'", InverseSquareRank.Options, {"norm": "rank"})


def test_rescore_by_hand():
    from recall_kit_fusion.rescore import LeadRescore

    lexical = [Hit("x", 3.0), Hit("y", 2.0), Hit("z", 1.0)]
    dense = [Hit("w", 0.9), Hit("z", 0.8), Hit("y", 0.1)]
    # Candidates: lexical's top 2: x, y (even when a deeper list is asked for). min-max: lexical x 1, y 0.5; dense w 1, z 0.875, y 0.
    fused = LeadRescore(LeadRescore.Options(candidates=2)).fuse(
        make_request({"bm25": lexical, "dense": dense}, {"bm25": 1.0, "dense": 2.0}, k=10))
    assert [(h.id, h.score) for h in fused] == [("x", 1.0), ("y", 0.5)]
    # With 3 candidates z enters: 0 + 2 x 0.875 = 1.75 puts it first; w (dense only) never appears.
    fused = LeadRescore(LeadRescore.Options(candidates=3)).fuse(
        make_request({"bm25": lexical, "dense": dense}, {"bm25": 1.0, "dense": 2.0}, k=3))
    assert [h.id for h in fused] == ["z", "x", "y"]
    warning = LeadRescore().diagnose({"bm25": 1.0, "dense": 0.5}, 10)
    assert len(warning) == 1 and "'dense' only re-orders the lead leg 'bm25'" in warning[0]
    with pytest.raises(ValueError, match="not a leg"):
        LeadRescore(LeadRescore.Options(lead="fts5")).fuse(make_request({"bm25": lexical}))
