"""ScoringSettings: the one value eval of several systems, ablate and sweep score with."""

from __future__ import annotations

import pytest

from recall_kit.errors import OptionError
from recall_kit.measure.run.settings import ScoringSettings


def test_run_system_scores_with_the_settings_alone():
    import inspect

    from recall_kit.measure.run.runner import run_system

    settings = ScoringSettings.of(k=5, metrics=["mrr"], relevance_level=2, judged_only=True, latency_sample=0, seed=3)
    assert settings.scoring() == {"k": 5, "metrics": ["mrr"], "seed": 3, "relevance_level": 2, "judged_only": True,
                                  "max_failed": None}
    # run_system takes the settings whole (one declaration, not run_benchmark's keywords again):
    # a scoring argument added to one cannot be forgotten in the other.
    parameters = set(inspect.signature(run_system).parameters)
    assert parameters == {"system", "dataset", "settings", "depth", "show_progress", "leg_runs"}


def test_a_bad_relevance_level_is_refused_before_anything_runs():
    with pytest.raises(OptionError, match="relevance level must be a whole number >= 1"):
        ScoringSettings.of(relevance_level=0)
    assert ScoringSettings.of(metrics=None).scoring()["metrics"] is None
