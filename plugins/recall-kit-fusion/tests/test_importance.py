"""Importance blend, by hand."""

from __future__ import annotations

import pytest
from fusion_test_helpers import as_dict, hits, make_request
from recall_kit_fusion.importance import ImportanceBlend

from recall_kit import Memory
from recall_kit.plugin import OptionError, build_options

CORPUS = [Memory("a", "x", importance=0.0), Memory("b", "y", importance=1.0), Memory("c", "z")]
RANKING = hits(("a", 1.0), ("b", 0.5), ("c", 0.0))  # minmax: 1, 0.5, 0


def blend(ranking=RANKING, **options):
    request = make_request({"fused": []}, ranking=list(ranking), corpus=CORPUS)
    return ImportanceBlend(ImportanceBlend.Options(**options)).fuse(request)


def test_default_weight():
    fused = blend()
    assert as_dict(fused) == pytest.approx({"a": 0.7 * 1 + 0.3 * 0.0, "b": 0.7 * 0.5 + 0.3 * 1.0,
                                            "c": 0.7 * 0 + 0.3 * 0.5})
    assert [hit.id for hit in fused] == ["a", "b", "c"]  # 0.7, 0.65, 0.15


def test_heavier_weight_reorders():
    fused = blend(importance_weight=0.5)  # a 0.5, b 0.75, c 0.25
    assert [hit.id for hit in fused] == ["b", "a", "c"]
    assert as_dict(fused)["b"] == pytest.approx(0.75)


def test_weight_extremes():
    assert [hit.id for hit in blend(importance_weight=0.0)] == ["a", "b", "c"]
    assert [hit.id for hit in blend(importance_weight=1.0)] == ["b", "c", "a"]  # importance 1, 0.5 (default), 0


def test_missing_importance_gets_the_default():
    assert as_dict(blend(default_importance=0.9))["c"] == pytest.approx(0.3 * 0.9)


def test_single_hit_and_equal_scores_count_as_top():
    assert as_dict(blend(ranking=hits(("a", 0.2))))["a"] == pytest.approx(0.7)
    assert as_dict(blend(ranking=hits(("a", 3.0), ("b", 3.0)))) == pytest.approx({"a": 0.7, "b": 1.0})


def test_bad_weight():
    with pytest.raises(ValueError):
        ImportanceBlend.Options(importance_weight=1.5)


def test_old_option_names_still_work_with_a_warning():
    with pytest.warns(UserWarning, match="is now called") as caught:
        options = build_options("fusion 'importance'", ImportanceBlend.Options, {"weight": "0.5", "default": "0.2"})
    assert [str(warning.message) for warning in caught] == [
        "fusion 'importance' option 'weight' is now called 'importance_weight'; the old name will be removed.",
        "fusion 'importance' option 'default' is now called 'default_importance'; the old name will be removed.",
    ]
    assert options == ImportanceBlend.Options(importance_weight=0.5, default_importance=0.2)
    with pytest.raises(OptionError, match="give only 'importance_weight'"):
        build_options("fusion 'importance'", ImportanceBlend.Options, {"weight": 0.5, "importance_weight": 0.5})
