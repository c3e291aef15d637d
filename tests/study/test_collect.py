"""What the study result is collected with (recall_kit.study.collect): the smallest detectable delta of
a stratum, the smallest p its size allows, whether a stratum can reach significance in its Holm
family, the relevant ids of a query; on hand-worked numbers. (The whole collection, from a study's
artefacts: tests/study/test_run.py, test_example.py.)"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import pytest

from recall_kit.dataset import Dataset, Query
from recall_kit.study.collect import (
    DETECTABLE_Z,
    detectable_z,
    mark_reach,
    minimum_detectable,
    relevant,
    smallest_p,
)
from recall_kit.study.result import StratumSummary
from recall_kit.types import Corpus


def test_the_detectable_z_is_the_two_sided_level_plus_power_0_8() -> None:
    normal = NormalDist()
    assert detectable_z(0.05) == pytest.approx(1.959964 + 0.841621, abs=1e-5) == DETECTABLE_Z
    assert detectable_z(0.05 / 8) == pytest.approx(normal.inv_cdf(1 - 0.05 / 16) + normal.inv_cdf(0.8))
    assert detectable_z(0.01) > detectable_z(0.05)


def test_the_smallest_detectable_delta_follows_the_paired_differences_spread() -> None:
    # paired differences 0.1, 0.3 (mean 0.2, sd 0.1414) on 2 queries: z * 0.1414 / sqrt 2 = z * 0.1
    assert minimum_detectable([0.5, 0.2], [0.6, 0.5]) == pytest.approx(DETECTABLE_Z * 0.1)
    # every difference 0: the baseline's spread times sqrt 2, as for independent values
    # (sd of 0, 1 is sqrt 0.5, times sqrt 2 is 1, over sqrt 2 queries)
    assert minimum_detectable([0.0, 1.0], [0.0, 1.0]) == pytest.approx(DETECTABLE_Z / math.sqrt(2))
    # four times the queries halve it
    assert minimum_detectable([0.5, 0.2] * 4, [0.6, 0.5] * 4) < minimum_detectable([0.5, 0.2], [0.6, 0.5]) / 1.9
    assert minimum_detectable([0.5], [0.7]) == math.inf  # one query: no spread to measure
    assert minimum_detectable([0.3, 0.3], [0.3, 0.3]) == math.inf  # no variation at all


def test_the_smallest_p_is_set_by_the_sign_assignments_or_the_resamples() -> None:
    assert smallest_p(3, 10_000) == 2.0 ** -2  # 2 of 8 sign assignments are as extreme
    assert smallest_p(40, 2000) == 1 / 2001  # more assignments than resamples
    assert smallest_p(14, 100_000) == 2.0 ** -13


def test_a_small_stratum_cannot_reach_significance_in_a_large_family() -> None:
    small = StratumSummary("exact", 5, "supplied by the user", False, 1.0, 0.0, {"recall@5": 0.3})
    large = StratumSummary("paraphrase", 60, "supplied by the user", False, 0.5, 0.0, {"recall@5": 0.1})
    mark_reach([small, large], family_rows=8, resamples=2000)
    # 5 queries: p >= 2 / 32 = 0.0625, times 8 rows is past 0.05; 60 queries: 8 / 2001 is not
    assert (small.smallest_p, small.reachable, small.family_rows) == (0.0625, False, 8)
    assert large.reachable and large.smallest_p == round(1 / 2001, 6)
    factor = detectable_z(0.05 / 8) / DETECTABLE_Z
    assert large.minimum_detectable_in_family == {"recall@5": round(0.1 * factor, 4)}


def test_a_querys_relevant_ids_are_those_graded_one_or_more() -> None:
    dataset = Dataset(path=Path("."), corpus=Corpus([]), queries=[Query("q1", "text")],
                      qrels={"q1": {"a": 2, "b": 0, "c": 1}})
    assert relevant(dataset, "q1") == {"a", "c"} and relevant(dataset, "q2") == set()
